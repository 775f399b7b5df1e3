/**
 * A local OIDC issuer on loopback, standing in for GitHub Actions' and GitLab's: a discovery
 * document, its JWKS and RS256 ID tokens with whatever claims the caller builds (the executor
 * gives them the providers' shapes). The server finds the keys through the discovery document
 * as it does for the real issuers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

export interface LocalIssuer {
  url: string;
  sign(claims: Record<string, unknown>, audience: string, ttlSeconds?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<LocalIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid: 'ci-key-1', alg: 'RS256', use: 'sig' };
  let url = '';
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration') {
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/.well-known/jwks`, id_token_signing_alg_values_supported: ['RS256'], response_types_supported: ['id_token'], subject_types_supported: ['public'] }));
    } else if (req.url === '/.well-known/jwks') {
      res.end(JSON.stringify({ keys: [jwk] }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    sign: (claims, audience, ttlSeconds = 300) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: jwk.kid!, typ: 'JWT' })
        .setIssuer(url)
        .setAudience(audience)
        .setIssuedAt()
        .setNotBefore('0s')
        .setExpirationTime(`${ttlSeconds}s`)
        .setJti(crypto.randomUUID())
        .sign(privateKey),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
