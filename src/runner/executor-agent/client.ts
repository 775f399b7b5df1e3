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

export interface ClientOptions {
  url: string;
  apiKey: string;
  log: Logger;
  /** Set when the executor stops: retries give up. */
  stopping: () => boolean;
}

/**
 * The runner's HTTP API as the executor uses it (Node's fetch, `Authorization: ApiKey`). Network
 * errors, 5xx and 429 are retried with exponential backoff and full jitter (250 ms doubling up
 * to 15 s), so an API restart or outage is ridden out; 4xx answers are thrown as ApiError.
 */
export class RunnerClient {
  constructor(private readonly o: ClientOptions) {}

  async request(method: string, path: string, body?: unknown, opts: { retry?: boolean; signal?: AbortSignal; raw?: BodyInit; headers?: Record<string, string> } = {}): Promise<Response> {
    let delay = 250;
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await fetch(new URL(path, this.o.url), {
          method,
          headers: {
            authorization: `ApiKey ${this.o.apiKey}`,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...opts.headers,
          },
          body: opts.raw ?? (body !== undefined ? JSON.stringify(body) : undefined),
          signal: opts.signal,
        });
        if (res.status < 500 && res.status !== 429) {
          if (res.status >= 400) {
            const problem = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
            throw new ApiError(res.status, problem.code, problem.detail ?? res.statusText);
          }
          return res;
        }
        await res.body?.cancel();
        if (opts.retry === false) throw new Error(`HTTP ${res.status}`);
        this.o.log('api_retry', { method, path, status: res.status, attempt });
      } catch (e) {
        if (e instanceof ApiError || opts.signal?.aborted || opts.retry === false) throw e;
        this.o.log('api_retry', { method, path, error: (e as Error).cause ? String((e as Error).cause) : (e as Error).message, attempt });
      }
      if (this.o.stopping() && attempt > 3) throw new Error(`giving up on ${method} ${path}: the executor is stopping`);
      await sleep(Math.random() * delay, undefined, { signal: opts.signal }).catch(() => {});
      if (opts.signal?.aborted) throw new Error('aborted');
      delay = Math.min(delay * 2, 15_000);
    }
  }

  async json<T>(method: string, path: string, body?: unknown, opts: { retry?: boolean; signal?: AbortSignal } = {}): Promise<T> {
    const res = await this.request(method, path, body, opts);
    return (await res.json()) as T;
  }
}
