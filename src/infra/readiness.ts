/**
 * Readiness (`/readyz` on every HTTP listener): whether this process should be sent new work.
 * `/healthz` stays a liveness check (the process answers); readiness also fails while the
 * process drains after SIGTERM, and while a part's database does not answer, so a load
 * balancer stops sending requests that could only fail.
 */

/** Set once by `startDraining` (SIGTERM): every listener of the process answers 503 from then on. */
let draining = false;

export function startDraining(): void {
  draining = true;
}

export function isDraining(): boolean {
  return draining;
}

/** How long one check's answer serves further probes: a flood of /readyz costs one query a second. */
const CHECK_REUSE_MS = 1000;
/** A database slower than this to answer `select 1` counts as unreachable. */
export const CHECK_TIMEOUT_MS = 2000;

/**
 * Why the process is not ready (null: ready). `check` names what does not answer, or null;
 * its answer is reused for a second and at most one check runs at a time.
 */
export function readinessProbe(check: () => Promise<string | null>): () => Promise<string | null> {
  let last: { at: number; problem: string | null } | null = null;
  let running: Promise<string | null> | null = null;
  return async () => {
    if (draining) return 'the process is shutting down (draining after SIGTERM)';
    if (last && performance.now() - last.at < CHECK_REUSE_MS) return last.problem;
    running ??= (async () => {
      const at = performance.now();
      let problem: string | null;
      try {
        problem = await withTimeout(check(), CHECK_TIMEOUT_MS);
      } catch (e) {
        problem = e instanceof Error ? e.message : String(e);
      }
      last = { at, problem };
      return problem;
    })().finally(() => {
      running = null;
    });
    return running;
  };
}

async function withTimeout(work: Promise<string | null>, ms: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${ms} ms`), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
