/**
 * Render time each product may use: a token bucket of milliseconds per product. A product starts
 * with `burstMs`, a render costs the time it took in its worker, and the bucket refills at
 * `share` ms per ms of wall time up to `burstMs`. Ordinary edits render in milliseconds and never
 * empty it; content built to take seconds per render (just under the time limit, so it never
 * counts as a failure) empties it after a few renders, and from then on the product gets at most
 * `share` of one worker's time, whatever it sends.
 */
export interface RenderBudgetOptions {
  /** Render time a product may use at once before it is throttled, ms. */
  burstMs: number;
  /** Fraction of wall time a throttled product earns back as render time (0 < share ≤ 1). */
  share: number;
  now: () => number;
}

export interface RenderBudget {
  /** Ms until `product` may render again: 0 while it has render time left. */
  waitMs(product: string): number;
  /** Counts `ms` of render time against `product`. */
  charge(product: string, ms: number): void;
}

export function renderBudget({ burstMs, share, now }: RenderBudgetOptions): RenderBudget {
  // Only products that used render time recently have an entry: a bucket refilled to the full
  // burst is dropped, so the map stays as small as the set of recently busy products.
  const buckets = new Map<string, { left: number; at: number }>();

  function left(product: string): number {
    const b = buckets.get(product);
    if (!b) return burstMs;
    const t = now();
    const refilled = Math.min(burstMs, b.left + Math.max(0, t - b.at) * share);
    if (refilled >= burstMs) {
      buckets.delete(product);
      return burstMs;
    }
    b.left = refilled;
    b.at = t;
    return refilled;
  }

  return {
    waitMs(product) {
      const l = left(product);
      // A render may overdraw the bucket (its cost is known only afterwards); the product then
      // waits until the debt is paid back and a little is left.
      return l > 0 ? 0 : Math.ceil((1 - l) / share);
    },
    charge(product, ms) {
      const l = left(product);
      buckets.set(product, { left: l - Math.max(0, ms), at: now() });
    },
  };
}
