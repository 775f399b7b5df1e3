/**
 * Crawl instruments (pier_crawl_*, table in infra/metrics/registry.ts): null while metrics are
 * off. The outcome is one of a fixed few, never a product, a label or a problem's text.
 */
import { Counter, Histogram } from 'prom-client';
import { instruments } from '../../infra/metrics/registry.js';

export type CrawlOutcome = 'ok' | 'fatal' | 'limit_exceeded' | 'failed' | 'removed';

export const crawlMetrics = instruments((registry) => {
  const crawls = new Counter({
    name: 'pier_crawls_total',
    help: 'Crawls of one label by how they ended: ok, fatal (the site cannot be read), limit_exceeded, failed (a defect of ours), removed (the label has no files)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of ['ok', 'fatal', 'limit_exceeded', 'failed', 'removed'] satisfies CrawlOutcome[]) crawls.inc({ outcome }, 0);
  return {
    crawls,
    duration: new Histogram({
      name: 'pier_crawl_duration_seconds',
      help: 'One crawl of one label, from its start to its result stored',
      // Crawls read a whole update site over HTTP: from a fraction of a second up to the timeout (600 s by default).
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [registry],
    }),
  };
});
