import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/** The headers helmet sets for `options`, and the ones it removes (X-Powered-By). */
export interface SecurityHeaders {
  set: readonly (readonly [string, string])[];
  removed: readonly string[];
}

/**
 * helmet's answer for `options`, computed once. @fastify/helmet calls `helmet(options)` anew on
 * every request, which parses every Content-Security-Policy directive again: a tenth of the CPU
 * time of an API request (bench/runner-auth.ts). Our options hold no per-request values (no
 * nonces, no directive functions), so every response gets the same headers.
 */
export function securityHeaders(options: HelmetOptions): SecurityHeaders {
  const set: [string, string][] = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      if (typeof value !== 'string') throw new Error(`helmet set ${name} to a value that is not one string`);
      set.push([name, value]);
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  let failed: unknown = null;
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    failed = err ?? null;
  });
  if (failed) throw failed;
  return { set, removed };
}

/** Applies headers computed by `securityHeaders` to a response about to be written. */
export function applySecurityHeaders(res: ServerResponse, headers: SecurityHeaders): void {
  for (const name of headers.removed) res.removeHeader(name);
  for (const [name, value] of headers.set) res.setHeader(name, value);
}
