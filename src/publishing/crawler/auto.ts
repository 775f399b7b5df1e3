/**
 * The automatic re-crawl loop of `pier serve`'s web part: every few seconds, labels whose uploads
 * have settled are crawled (docs/vendors.md#what-triggers-a-re-crawl). Passes never overlap;
 * several instances coordinate through the claim in the database.
 */
import type { CrawlerService } from './service.js';

export interface AutoCrawl {
  /** Runs one pass now (also used by tests); resolves with the labels crawled. */
  pass(): Promise<string[]>;
  stop(): Promise<void>;
}

export function startAutoCrawl(
  crawler: CrawlerService,
  settleSeconds: number,
  log: { info(o: object, msg: string): void; error(o: object, msg: string): void },
): AutoCrawl {
  const settleMs = settleSeconds * 1000;
  let running: Promise<string[]> | null = null;
  const pass = () => {
    running ??= crawler
      .crawlSettled(settleMs, (label, err) => log.error({ err, label }, 'automatic crawl of a label failed'))
      .then((done) => {
        if (done.length) log.info({ labels: done }, 'crawled settled uploads');
        return done;
      })
      .catch((e: unknown) => {
        log.error({ err: e }, 'automatic crawl pass failed');
        return [];
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = setInterval(() => void pass(), Math.max(1000, Math.min(15_000, settleMs / 4)));
  timer.unref();
  return {
    pass,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
