/**
 * The HTTP calls of `pier publish`: the public publishing info, the label's file manifest, the
 * page PATCH (dry run and real), the release and the trusted-publishing exchange. Every call has
 * a deadline and a size limit on its answer (server-answer.ts); answers are checked for the
 * fields used, so a wrong --server fails clearly.
 */
import { ANSWER_LIMITS, readJsonAnswer } from '../server-answer.js';
import { EXIT, type ExitCode, PublishFailure } from './failure.js';

export interface PublishingInfo {
  baseUrl: string;
  downloadUrl: string;
  sftp: { host: string; port: number; hostKeys: { type: string; fingerprint: string }[] };
  trustedPublishing?: { tokenEndpoint: string; audience: string };
}

export interface RemoteFile {
  path: string;
  size: number;
  sha256: string;
}

export interface LabelFiles {
  label: string;
  files: RemoteFile[];
  folders?: string[];
  archive?: { size: number; sha256: string } | null;
}

export interface Problem {
  status: number;
  code?: string;
  detail?: string;
  errors?: { field: string; message: string; line?: number }[];
  problems?: CrawlProblem[];
}

export interface CrawlProblem {
  severity: 'fatal' | 'error' | 'warning';
  code: string;
  message: string;
  where: string;
  line?: number;
}

export interface LabelCrawl {
  label: string;
  status: string;
  url: string;
  summary: { units: number; features: number; bundles: number; categories: number; nodes: number; problems: number; fatal: boolean } | null;
  problems: CrawlProblem[];
  /** The label's platform range (OSGi notation); absent from servers older than platform ranges. */
  platformRange?: string | null;
}

export interface ReleaseAnswer {
  label: string;
  release: { number: number; createdAt: string; files: number; bytes: number } | null;
  unchanged: boolean;
  crawl: LabelCrawl | null;
}

/** An answer that is not 2xx, with its problem+json body when it has one. */
export class HttpProblem extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? `HTTP ${problem.status}`);
    this.name = 'HttpProblem';
  }
}

/** No answer within the deadline. */
export class HttpTimeout extends Error {
  constructor(what: string, seconds: number) {
    super(`${what}: no answer within ${seconds} s`);
    this.name = 'HttpTimeout';
  }
}

export interface ApiOptions {
  server: string;
  /** Deadline of one ordinary call, seconds. */
  timeoutSeconds: number;
  userAgent: string;
}

async function call<T>(
  opts: ApiOptions,
  method: string,
  path: string,
  init: { token?: string; body?: unknown; timeoutSeconds?: number; what: string; limitBytes: number },
): Promise<T> {
  const seconds = init.timeoutSeconds ?? opts.timeoutSeconds;
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': opts.userAgent };
  if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(new URL(path, `${opts.server}/`), {
      method,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(seconds * 1000),
      redirect: 'error',
    });
  } catch (e) {
    if ((e as Error).name === 'TimeoutError') throw new HttpTimeout(init.what, seconds);
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(`${init.what}: ${opts.server} is unreachable (${cause?.code ?? cause?.message ?? (e as Error).message})`);
  }
  let json: unknown;
  try {
    // Not JSON (null): a proxy's error page or not a Pier server; the status says enough.
    json = await readJsonAnswer(res, init.what, init.limitBytes);
  } catch (e) {
    if ((e as Error).name === 'TimeoutError') throw new HttpTimeout(init.what, seconds);
    throw e;
  }
  if (!res.ok) {
    const p = (json && typeof json === 'object' ? json : {}) as Omit<Problem, 'status'>;
    throw new HttpProblem({ ...p, status: res.status, detail: p.detail ?? `HTTP ${res.status}` });
  }
  if (json === null || typeof json !== 'object') throw new Error(`${init.what}: the answer of ${opts.server} is not JSON (is --server a Pier server?)`);
  return json as T;
}

/** Maps 401/403 to exit 4, naming the credential; anything else to `otherwise`. */
export function failureOf(e: unknown, what: string, otherwise: ExitCode): PublishFailure {
  if (e instanceof PublishFailure) return e;
  if (e instanceof HttpProblem && (e.problem.status === 401 || e.problem.status === 403)) {
    return new PublishFailure(EXIT.authentication, `${what}: refused (${e.problem.status}): ${e.problem.detail}`, fieldLines(e.problem));
  }
  if (e instanceof HttpProblem) return new PublishFailure(otherwise, `${what}: ${e.problem.status} ${e.problem.detail}`, fieldLines(e.problem));
  return new PublishFailure(otherwise, e instanceof Error ? e.message : String(e));
}

export function fieldLines(p: Problem): string[] {
  return (p.errors ?? []).map((e) => `${e.field}${e.line ? ` (line ${e.line})` : ''}: ${e.message}`);
}

export function publishingApi(opts: ApiOptions) {
  const product = (id: string) => `api/products/${encodeURIComponent(id)}`;
  return {
    async info(): Promise<PublishingInfo> {
      const info = await call<PublishingInfo>(opts, 'GET', 'api/publishing', { what: 'GET /api/publishing', limitBytes: ANSWER_LIMITS.info });
      if (typeof info.sftp?.host !== 'string' || !Number.isInteger(info.sftp?.port) || !Array.isArray(info.sftp?.hostKeys)) {
        throw new Error(`GET /api/publishing: the answer of ${opts.server} has no SFTP address (is --server a Pier server?)`);
      }
      return info;
    },

    labelFiles(id: string, label: string, token: string): Promise<LabelFiles> {
      return call<LabelFiles>(opts, 'GET', `${product(id)}/labels/${encodeURIComponent(label)}/files`, { token, what: 'reading the label\'s files', limitBytes: ANSWER_LIMITS.manifest });
    },

    patch(id: string, token: string, body: Record<string, unknown>, dryRun: boolean): Promise<{ warnings?: { field: string; message: string }[] }> {
      return call(opts, 'PATCH', `${product(id)}${dryRun ? '?dryRun=true' : ''}`, { token, body, what: dryRun ? 'page fields (dry run)' : 'page fields', limitBytes: ANSWER_LIMITS.page });
    },

    release(id: string, label: string, token: string, timeoutSeconds: number): Promise<ReleaseAnswer> {
      return call<ReleaseAnswer>(opts, 'POST', `${product(id)}/labels/${encodeURIComponent(label)}/release`, {
        token,
        body: {},
        timeoutSeconds,
        what: 'release (waiting for the crawl)',
        limitBytes: ANSWER_LIMITS.release,
      });
    },

    exchange(idToken: string, productId: string): Promise<{ token: string; expiresAt: string; productId: string }> {
      // Always the endpoint on --server (the contract's path), whatever a base URL setting says:
      // the ID token is a credential and goes to no other host.
      return call(opts, 'POST', 'api/oidc/token', { body: { token: idToken, product: productId }, what: 'trusted publishing token exchange', limitBytes: ANSWER_LIMITS.credential });
    },
  };
}

export type PublishingApi = ReturnType<typeof publishingApi>;
