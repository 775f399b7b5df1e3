import { isIP } from 'node:net';
import type { TrustProxy } from './config.js';
import { trustedPeer } from './request-id.js';

/** Longer X-Forwarded-For values are not read past this (a proxy chain of a few hops is far shorter). */
const MAX_FORWARDED_CHARS = 2048;

/**
 * The client's address of a request, by the rule PIER_TRUST_PROXY gives the web app's `req.ip`
 * (fastify's proxy-addr): the peer, then the `X-Forwarded-For` entries from the right (each
 * proxy appends the address it received from), walked while the address reached so far is a
 * trusted proxy. A hop count trusts that many hops; a list trusts its addresses and blocks; off
 * trusts nobody, so the peer is the client. A value the walk reaches that is not an IP address
 * is returned as it is (cut to 64 characters): only a trusted proxy can have put it there.
 */
export function clientAddressResolver(trust: TrustProxy): (peer: string | undefined, forwardedFor: string | readonly string[] | null | undefined) => string | undefined {
  if (trust === false || trust === 0) return (peer) => peer;
  const trusts = typeof trust === 'number' ? null : trustedPeer(trust);
  const hops = typeof trust === 'number' ? trust : Number.POSITIVE_INFINITY;
  return (peer, forwardedFor) => {
    if (peer === undefined || forwardedFor === undefined || forwardedFor === null) return peer;
    const value = (typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')).slice(-MAX_FORWARDED_CHARS);
    const entries = value.split(',');
    let client = peer;
    for (let hop = 0, i = entries.length - 1; i >= 0; hop++, i--) {
      const trusted = hop < hops && (trusts === null || (isIP(client) !== 0 && trusts(client)));
      if (!trusted) break;
      const next = (entries[i] as string).trim();
      // An empty entry (a trailing comma, a cut-off first entry) ends the chain at the last proxy.
      if (next === '') break;
      client = next.slice(0, 64);
    }
    return client;
  };
}
