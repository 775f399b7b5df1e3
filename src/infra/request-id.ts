import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { TrustProxy } from './config.js';

/** The header a proxy passes its request id in, and we answer ours in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * A request id we take from a proxy: at most 128 visible characters from a small set, so it
 * cannot break a log line or a header (UUIDs, ULIDs, nginx's `$request_id`, Cloudflare's and
 * AWS's ids fit). Anything else is replaced by one of ours, not refused: the request itself is fine.
 */
const ACCEPTED = /^[A-Za-z0-9._:@+/=-]{1,128}$/;

/**
 * Whether the connection's peer is a proxy whose `X-Request-Id` we believe: the same rule as
 * PIER_TRUST_PROXY for `X-Forwarded-For` (a hop count trusts the nearest peer; a list trusts
 * peers inside it; off trusts nobody), so a client cannot choose the id its requests log under
 * unless the operator said its proxy may.
 */
export function trustedPeer(trust: TrustProxy): (address: string | undefined) => boolean {
  if (trust === false || trust === 0) return () => false;
  if (typeof trust === 'number') return () => true;
  const list = new BlockList();
  for (const entry of trust) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    // BlockList refuses a /0 subnet: it is every address of the family.
    else if (Number(prefix) === 0) list.addRange(family === 'ipv6' ? '::' : '0.0.0.0', family === 'ipv6' ? 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' : '255.255.255.255', family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => {
    if (!address) return false;
    // An IPv4 client on a dual-stack socket shows as ::ffff:a.b.c.d.
    const v4 = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : null;
    return v4 ? list.check(v4, 'ipv4') || list.check(address, 'ipv6') : list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  };
}

/** The id of one request: the trusted proxy's when it sent a usable one, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined, peer: string | undefined, trusts: (address: string | undefined) => boolean): string {
  if (typeof header === 'string' && ACCEPTED.test(header) && trusts(peer)) return header;
  return randomUUID();
}

/** `requestIdOf` for a node:http request. */
export function requestIdGenerator(trust: TrustProxy): (req: IncomingMessage) => string {
  const trusts = trustedPeer(trust);
  return (req) => requestIdOf(req.headers[REQUEST_ID_HEADER], req.socket.remoteAddress, trusts);
}

/** `requestIdOf` for the raw-socket fast path (infra/fast-path): the value sent and the peer. */
export function fastPathRequestIds(trust: TrustProxy): (sent: string | null, peer: string | undefined) => string {
  const trusts = trustedPeer(trust);
  return (sent, peer) => requestIdOf(sent ?? undefined, peer, trusts);
}
