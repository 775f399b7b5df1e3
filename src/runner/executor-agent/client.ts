import { setTimeout as sleep } from 'node:timers/promises';

/** One line per event on stdout, as JSON (time, event, fields). Never secrets. */
export type Logger = (event: string, fields?: Record<string, unknown>) => void;

export const jsonLogger: Logger = (event, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`);
};

/** An answer the runner gave on purpose (4xx): retrying the same request cannot help. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    detail: string,
  ) {
    super(`${status}${code ? ` ${code}` : ''}: ${detail}`);
  }
}

/**
 * The URL of an API path on a runner that may sit behind a path prefix
 * (`https://host/runner` + `/api/x` = `https://host/runner/api/x`): `new URL('/api/x', base)`
 * would drop the prefix.
 */
export function apiUrl(base: string, pathAndQuery: string): URL {
  const url = new URL(base);
  const q = pathAndQuery.indexOf('?');
  const p = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  url.pathname = url.pathname.replace(/\/+$/, '') + (p.startsWith('/') ? p : `/${p}`);
  url.search = q < 0 ? '' : pathAndQuery.slice(q);
  url.hash = '';
  return url;
}

export interface ClientOptions {
  url: string;
  apiKey: string;
  log: Logger;
  /** Set when the executor stops: retries give up. */
  stopping: () => boolean;
}

/** Retrying went on for the caller's `giveUpAfterMs` without success. */
export class GaveUpError extends Error {}

export interface RequestOptions {
  retry?: boolean;
  signal?: AbortSignal;
  /** Stop retrying (throw) once failures went on this long. */
  giveUpAfterMs?: number;
}

/**
 * The runner's HTTP API as the executor uses it (Node's fetch, `Authorization: ApiKey`). Network
 * errors, 5xx and 429 are retried with exponential backoff and full jitter (250 ms doubling up
 * to 15 s), so an API restart or outage is ridden out; 4xx answers are thrown as ApiError.
 *
 * A retry waiting out its backoff after a network error or a 5xx is woken as soon as any other
 * request gets an answer (the heartbeat, tried every second while the runner is away): an API
 * that restarted is taken up again within a heartbeat, not after a backoff of up to 15 s that
 * grew while it was down. A 429 is never woken early (the runner asked to slow down).
 */
export class RunnerClient {
  /** Retries waiting because the runner could not be reached. */
  readonly #waiting = new Set<() => void>();

  constructor(private readonly o: ClientOptions) {}

  /** The runner answered: whoever waits for it to come back tries again now. */
  #reached(): void {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const wake of waiting) wake();
  }

  /**
   * Waits `ms` before a retry; with `wakeable`, less once the runner answers another request. Also
   * ends on `signal`'s abort.
   */
  async backoff(ms: number, wakeable: boolean, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    let wake = () => {};
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    if (wakeable) this.#waiting.add(wake);
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.race([sleep(ms, undefined, { signal: abort.signal }).catch(() => {}), woken]);
    } finally {
      this.#waiting.delete(wake);
      signal?.removeEventListener('abort', onAbort);
      abort.abort();
    }
  }

  async request(method: string, path: string, body?: unknown, opts: RequestOptions & { raw?: BodyInit; headers?: Record<string, string> } = {}): Promise<Response> {
    let delay = 250;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      let unreachable = true;
      try {
        const res = await fetch(apiUrl(this.o.url, path), {
          method,
          headers: {
            authorization: `ApiKey ${this.o.apiKey}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...opts.headers,
          },
          body: opts.raw ?? (body !== undefined ? JSON.stringify(body) : undefined),
          signal: opts.signal,
        });
        if (res.status !== 502 && res.status !== 503 && res.status !== 504) this.#reached();
        if (res.status < 500 && res.status !== 429) {
          if (res.status >= 400) {
            const problem = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
            throw new ApiError(res.status, problem.code, problem.detail ?? res.statusText);
          }
          return res;
        }
        await res.body?.cancel();
        unreachable = res.status !== 429;
        if (opts.retry === false) throw new Error(`HTTP ${res.status}`);
        this.o.log('api_retry', { method, path, status: res.status, attempt });
      } catch (e) {
        if (e instanceof ApiError || opts.signal?.aborted || opts.retry === false) throw e;
        this.o.log('api_retry', { method, path, error: (e as Error).cause ? String((e as Error).cause) : (e as Error).message, attempt });
      }
      if (opts.giveUpAfterMs !== undefined && Date.now() - started >= opts.giveUpAfterMs) {
        throw new GaveUpError(`giving up on ${method} ${path} after ${Math.round((Date.now() - started) / 1000)} s of failures`);
      }
      if (this.o.stopping() && attempt > 3) throw new Error(`giving up on ${method} ${path}: the executor is stopping`);
      await this.backoff(Math.random() * delay, unreachable, opts.signal);
      if (opts.signal?.aborted) throw new Error('aborted');
      delay = Math.min(delay * 2, 15_000);
    }
  }

  async json<T>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, body, opts);
    return (await res.json()) as T;
  }
}
