/**
 * Graceful stop of one listener (SIGTERM, issue 21): `close` stops taking connections and
 * resolves once the work in flight is done; if that takes longer than `drainMs`, `force` cuts
 * what is left (connections, transfers) so the process still ends within the bound.
 */
export async function drained(close: () => Promise<void>, drainMs: number, force: () => void): Promise<void> {
  if (drainMs <= 0) force();
  const timer = drainMs > 0 ? setTimeout(force, drainMs) : undefined;
  timer?.unref();
  try {
    await close();
  } finally {
    clearTimeout(timer);
  }
}
