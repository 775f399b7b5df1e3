// The second steady load of `npm run bench hostile-load`: another product's page, asked for at a
// fixed rate (BENCH_HOSTILE_PAGE_RATE, 20 req/s) beside the steady downloads, quiet and under
// attack, so that "another product's page stays within 2x of quiet" can be read as well as the
// download host's. Open-loop like the downloads load: each latency counts from the request's
// scheduled time, and requests unanswered `graceS` after the run count as unfinished with the
// time they waited so far.
import http from 'node:http';

export const PAGE_RATE = Number(process.env.BENCH_HOSTILE_PAGE_RATE ?? 20);

export interface PageRun {
  sent: number;
  done: number;
  errors: number;
  unfinished: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  firstError: string | null;
}

/** Nearest-rank percentile of sorted values. */
const pct = (sorted: number[], p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;

/** GETs of `url` (a page answering 200 with `expect` in its body) at `rate` for `seconds`. */
export async function steadyPage(url: string, expect: string, seconds: number, graceS: number, rate = PAGE_RATE): Promise<PageRun> {
  const { hostname, port, pathname, search } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const latencies: number[] = [];
  const inFlight = new Map<http.ClientRequest, number>();
  const run: PageRun = { sent: 0, done: 0, errors: 0, unfinished: 0, rps: 0, p50: 0, p99: 0, max: 0, firstError: null };
  const fail = (why: string) => {
    run.errors++;
    run.firstError ??= why;
  };
  const total = Math.round(seconds * rate);
  const start = performance.now();
  const fire = (i: number) => {
    const scheduled = start + (i * 1000) / rate;
    const req = http.get({ agent, hostname, port, path: `${pathname}${search}` }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        inFlight.delete(req);
        latencies.push(performance.now() - scheduled);
        run.done++;
        if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`);
        else if (!Buffer.concat(chunks).includes(expect)) fail(`the page does not say "${expect}"`);
      });
    });
    req.on('error', (e) => {
      if (!inFlight.delete(req)) return;
      latencies.push(performance.now() - scheduled);
      run.done++;
      fail(e.message);
    });
    inFlight.set(req, scheduled);
    run.sent++;
  };
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
      while (run.sent < due) fire(run.sent);
      if (run.sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  for (const until = performance.now() + graceS * 1000; inFlight.size && performance.now() < until; ) await new Promise((r) => setTimeout(r, 20));
  const end = performance.now();
  for (const [req, scheduled] of inFlight) {
    latencies.push(end - scheduled);
    run.unfinished++;
    req.destroy();
  }
  inFlight.clear();
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  return { ...run, rps: run.done / ((end - start) / 1000), p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN };
}

const ms = (v: number) => `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ms`.padStart(9);

export function pageRow(name: string, r: PageRun): string {
  const bad = r.errors || r.unfinished ? `  errors ${r.errors}, unfinished ${r.unfinished}${r.firstError ? ` (${r.firstError})` : ''}` : '  no errors';
  return `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(5)} req/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  max ${ms(r.max)}${bad}`;
}
