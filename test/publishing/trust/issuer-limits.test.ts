/**
 * A broken or hostile CI issuer: a discovery document or JWKS far larger than any real one, or
 * one that trickles for ever. The exchange answers 503 (the issuer's keys cannot be read) within
 * the time limit, and the web part never holds more than a bounded answer in memory.
 * SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SignJWT, generateKeyPair } from 'jose';
import { MAX_ISSUER_DOCUMENT_BYTES } from '../../../src/publishing/trust/issuers.js';
import { dialects } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { githubClaims } from './issuer.js';

const AUDIENCE = 'http://127.0.0.1:8080';

/** How the hostile issuer answers its JWKS (its discovery document is sound unless `discovery` says). */
type Mode = { jwks: 'huge' | 'slow' | 'huge-declared'; discovery?: 'huge' };

async function startHostileIssuer(mode: Mode) {
  let sent = 0;
  const server = http.createServer((req, res) => {
    const pad = (n: number) => {
      // Valid JSON once complete: a reader without a limit would take it all and parse it.
      res.write('{"keys":[],"pad":"');
      const chunk = 'x'.repeat(64 * 1024);
      const write = () => {
        while (sent < n) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end('"}');
      };
      write();
    };
    if (req.url === '/.well-known/openid-configuration') {
      if (mode.discovery === 'huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return pad(64 * 1024 * 1024);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks` }));
    }
    if (mode.jwks === 'slow') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
      const t = setInterval(() => res.write(' '), 200);
      res.on('close', () => clearInterval(t));
      return;
    }
    if (mode.jwks === 'huge-declared') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 * 1024 * 1024) });
      return res.write('{');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    return pad(64 * 1024 * 1024);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    sent: () => sent,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

for (const target of dialects()) {
  describe(`trusted publishing with a hostile issuer (${target.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    before(async () => {
      db = await target.create();
    });
    after(async () => {
      await db?.drop();
    });

    for (const mode of [{ jwks: 'huge' }, { jwks: 'huge-declared' }, { jwks: 'slow' }, { jwks: 'huge', discovery: 'huge' }] as Mode[]) {
      test(`JWKS ${mode.jwks}${mode.discovery ? `, discovery ${mode.discovery}` : ''}: 503 within the time limit, a bounded read`, { timeout: 60_000 }, async () => {
        const issuer = await startHostileIssuer(mode);
        let server: RunningPublishing | undefined;
        try {
          server = await startPublishing(db.url, { failureLimits: { maxFailures: 10_000 } }, { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_AUDIENCE: AUDIENCE });
          const { privateKey } = await generateKeyPair('RS256');
          const now = Math.floor(Date.now() / 1000);
          const token = await new SignJWT({ ...githubClaims(AUDIENCE), iss: issuer.url, iat: now, exp: now + 300, jti: crypto.randomUUID() })
            .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
            .sign(privateKey);
          const started = Date.now();
          const res = await fetch(`${server.url}/api/oidc/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
          const took = Date.now() - started;
          assert.equal(res.status, 503, await res.text());
          assert.ok(took < 12_000, `answered in ${took} ms`);
          // The issuer may have pushed more into socket buffers, but nothing near the whole.
          if (mode.jwks !== 'slow') assert.ok(issuer.sent() < 32 * 1024 * 1024, `sent ${issuer.sent()} bytes (limit ${MAX_ISSUER_DOCUMENT_BYTES})`);
        } finally {
          await server?.close();
          await issuer.close();
        }
      });
    }
  });
}
