import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { randomId } from '../../../src/infra/secrets.js';

type SigningKey = { kid: string; alg: 'RS256' | 'ES256'; privateKey: CryptoKey; jwk: JWK };

async function newKey(alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `k-${randomId(4)}`;
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * A local OIDC issuer on loopback, as GitHub Actions' and GitLab's look from outside: a discovery
 * document (OpenID Connect Discovery 1.0 §4) naming a JWKS, and ID tokens signed with its keys
 * in the claim shapes those CIs send.
 */
export interface LocalIssuer {
  url: string;
  /** How often the JWKS was read. */
  jwksReads(): number;
  /** Signs `claims` (iss, iat, exp, nbf, jti added unless given) with the current key. */
  sign(claims: JWTPayload, options?: { alg?: 'RS256' | 'ES256'; kid?: string; key?: CryptoKey; header?: Record<string, unknown> }): Promise<string>;
  /** A new signing key with a new kid replaces the old one in the JWKS (the old one is gone). */
  rotate(): Promise<void>;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<LocalIssuer> {
  let keys: SigningKey[] = [await newKey('RS256'), await newKey('ES256')];
  let reads = 0;
  const server = http.createServer((req, res) => {
    const send = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/openid-configuration') {
      return send({
        issuer: url,
        jwks_uri: `${url}/.well-known/jwks`,
        response_types_supported: ['id_token'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
      });
    }
    if (req.url === '/.well-known/jwks') {
      reads++;
      return send({ keys: keys.map((k) => k.jwk) });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    jwksReads: () => reads,
    async sign(claims, options = {}) {
      const alg = options.alg ?? 'RS256';
      const key = keys.find((k) => k.alg === alg)!;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: url, iat: now, nbf: now - 5, exp: now + 300, jti: randomId(16), ...claims })
        .setProtectedHeader({ alg, kid: options.kid ?? key.kid, typ: 'JWT', ...options.header })
        .sign(options.key ?? key.privateKey);
    },
    async rotate() {
      keys = [await newKey('RS256'), await newKey('ES256')];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The claims of a GitHub Actions job's ID token (docs.github.com, "Understanding the OIDC token"). */
export function githubClaims(audience: string, over: Record<string, unknown> = {}): JWTPayload {
  const repository = (over.repository as string | undefined) ?? 'octo-org/csv-nodes';
  const ref = (over.ref as string | undefined) ?? 'refs/tags/v1.2.0';
  const workflow = (over.workflow as string | undefined) ?? '.github/workflows/release.yml';
  const { workflow: _w, ...rest } = over;
  return {
    aud: audience,
    sub: `repo:${repository}:environment:release`,
    actor: 'octocat',
    actor_id: '583231',
    base_ref: '',
    environment: 'release',
    event_name: 'push',
    head_ref: '',
    job_workflow_ref: `${repository}/${workflow}@${ref}`,
    job_workflow_sha: 'a'.repeat(40),
    ref,
    ref_protected: 'true',
    ref_type: 'tag',
    repository,
    repository_id: '690002541',
    repository_owner: repository.split('/')[0],
    repository_owner_id: '9919',
    repository_visibility: 'public',
    run_attempt: '1',
    run_id: '12233154281',
    run_number: '42',
    runner_environment: 'github-hosted',
    sha: 'b'.repeat(40),
    workflow: 'Release',
    workflow_ref: `${repository}/${workflow}@${ref}`,
    workflow_sha: 'a'.repeat(40),
    ...rest,
  };
}

/** The claims of a GitLab CI job's ID token (docs.gitlab.com, "OpenID Connect (OIDC) ID tokens"). */
export function gitlabClaims(audience: string, over: Record<string, unknown> = {}): JWTPayload {
  const project = (over.project_path as string | undefined) ?? 'acme/nodes/csv-nodes';
  return {
    aud: audience,
    sub: `project_path:${project}:ref_type:tag:ref:v1.2.0`,
    namespace_id: '72',
    namespace_path: project.split('/').slice(0, -1).join('/'),
    project_id: '4242',
    project_path: project,
    user_id: '17',
    user_login: 'maria',
    user_email: 'maria@example.com',
    user_identities: [],
    pipeline_id: '1212121',
    pipeline_source: 'push',
    job_id: '3434343',
    ref: 'v1.2.0',
    ref_type: 'tag',
    ref_path: 'refs/tags/v1.2.0',
    ref_protected: 'true',
    environment: 'production',
    environment_protected: 'true',
    deployment_tier: 'production',
    runner_id: 1,
    runner_environment: 'gitlab-hosted',
    sha: 'c'.repeat(40),
    ci_config_ref_uri: `gitlab.example.com/${project}//.gitlab-ci.yml@refs/tags/v1.2.0`,
    ci_config_sha: 'd'.repeat(40),
    project_visibility: 'public',
    ...over,
  };
}
