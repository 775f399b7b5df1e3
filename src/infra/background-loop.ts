/**
 * A task a server repeats in the background (the runner's scheduler and retention): one pass at a
 * time, the next `intervalMs` after the previous one ended, never keeping the process alive on
 * its own. `stop()` cancels the wait, signals the pass in progress through its AbortSignal and
 * resolves once that pass has finished, so a server closes its database only after.
 */
export class BackgroundLoop {
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;
  private readonly abort = new AbortController();
  private started = false;

  constructor(
    private readonly opts: {
      intervalMs: number;
      /** Delay before the first pass (default: intervalMs). */
      firstDelayMs?: number;
      run: (signal: AbortSignal) => Promise<void>;
      onError: (e: unknown) => void;
    },
  ) {}

  start(): void {
    if (this.started || this.abort.signal.aborted) return;
    this.started = true;
    this.schedule(this.opts.firstDelayMs ?? this.opts.intervalMs);
  }

  private schedule(ms: number): void {
    if (this.abort.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.current = this.opts
        .run(this.abort.signal)
        .catch((e) => {
          if (!this.abort.signal.aborted) this.opts.onError(e);
        })
        .finally(() => {
          this.current = null;
          this.schedule(this.opts.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
  }
}

/** Waits `ms`, or less when `signal` aborts (then resolves, never rejects). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
