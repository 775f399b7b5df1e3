/**
 * Trusted publishing, client side: in a CI job with an ID token available,
 * the CI's OIDC ID token is exchanged at the server for a short-lived product credential used
 * as the edit token and the SFTP password, so the pipeline stores no secret.
 * GitHub Actions: the job requests the token (ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN exist only
 * with `permissions: id-token: write`) for the server's audience. GitLab CI: the pipeline
 * declares the token (`id_tokens: PIER_ID_TOKEN: aud: …`) and it arrives in the environment.
 */
import { ANSWER_LIMITS, readJsonAnswer } from '../server-answer.js';
import type { PublishingApi } from './api.js';
import { EXIT, PublishFailure } from './failure.js';

export interface TrustedCredential {
  token: string;
  expiresAt: Date;
  provider: 'github' | 'gitlab';
  /** Who the CI says ran this (claims of the ID token), for the log: never the token itself. */
  identity: string;
}

type Env = Record<string, string | undefined>;

export function trustedProvider(env: Env): 'github' | 'gitlab' | null {
  if (env.ACTIONS_ID_TOKEN_REQUEST_URL && env.ACTIONS_ID_TOKEN_REQUEST_TOKEN) return 'github';
  if (env.PIER_ID_TOKEN) return 'gitlab';
  return null;
}

/** The claims of a JWT, read without checking it (the server checks it): only to say who we are. */
function claimsOf(jwt: string): Record<string, unknown> {
  try {
    return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function describe(provider: 'github' | 'gitlab', c: Record<string, unknown>): string {
  const pick = (...keys: string[]) =>
    keys
      .filter((k) => typeof c[k] === 'string' || typeof c[k] === 'number')
      .map((k) => `${k}=${String(c[k])}`)
      .join(' ');
  return provider === 'github'
    ? `GitHub Actions ${pick('repository', 'workflow_ref', 'ref', 'environment', 'run_id')}`
    : `GitLab CI ${pick('project_path', 'ref', 'environment', 'pipeline_id', 'job_id')}`;
}

async function githubIdToken(env: Env, audience: string, timeoutSeconds: number): Promise<string> {
  const url = new URL(env.ACTIONS_ID_TOKEN_REQUEST_URL as string);
  url.searchParams.set('audience', audience);
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${env.ACTIONS_ID_TOKEN_REQUEST_TOKEN}`, accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
    });
  } catch (e) {
    throw new PublishFailure(EXIT.authentication, `requesting the GitHub Actions ID token failed: ${(e as Error).message}`);
  }
  let body: { value?: unknown } | null;
  try {
    body = (await readJsonAnswer(res, 'requesting the GitHub Actions ID token', ANSWER_LIMITS.credential)) as { value?: unknown } | null;
  } catch (e) {
    throw new PublishFailure(EXIT.authentication, e instanceof Error ? e.message : String(e));
  }
  if (!res.ok || typeof body?.value !== 'string') {
    throw new PublishFailure(EXIT.authentication, `requesting the GitHub Actions ID token failed: HTTP ${res.status} (does the job have "permissions: id-token: write"?)`);
  }
  return body.value;
}

/**
 * The product credential from the CI's ID token, or null outside a CI with one. The audience is
 * the server's (GET /api/publishing); GitLab's token carries what the pipeline declared.
 */
export async function trustedCredential(
  env: Env,
  api: PublishingApi,
  exchange: { audience: string; productId: string; timeoutSeconds: number },
): Promise<TrustedCredential | null> {
  const provider = trustedProvider(env);
  if (!provider) return null;
  const idToken = provider === 'github' ? await githubIdToken(env, exchange.audience, exchange.timeoutSeconds) : (env.PIER_ID_TOKEN as string);
  const identity = describe(provider, claimsOf(idToken));
  let answer: { token: string; expiresAt: string; productId: string };
  try {
    answer = await api.exchange(idToken, exchange.productId);
  } catch (e) {
    const p = (e as { problem?: { status: number; detail?: string; errors?: { field: string; message: string }[] } }).problem;
    const details = (p?.errors ?? []).map((x) => `${x.field}: ${x.message}`);
    throw new PublishFailure(EXIT.authentication, `trusted publishing refused for ${identity}: ${p ? `${p.status} ${p.detail}` : (e as Error).message}`, details);
  }
  if (typeof answer.token !== 'string' || answer.productId !== exchange.productId) {
    throw new PublishFailure(EXIT.authentication, `trusted publishing: the credential is for product "${answer.productId}", not "${exchange.productId}"`);
  }
  return { token: answer.token, expiresAt: new Date(answer.expiresAt), provider, identity };
}
