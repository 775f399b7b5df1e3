// `npm run bench metrics`: what metrics cost (docs/operators.md#metrics). The same server twice on
// the same data, metrics off (the default) and on (PIER_METRICS_PORT), each on CPU 1, wrk (C) on
// CPU 0; BENCH_ROUNDS (9) rounds of BENCH_SECONDS (3) s per row, who goes first alternating, and
// the median of the paired ratios on/off (target >= 0.95: a difference of a few percent needs more
// and longer rounds than the other benches' 5 x 2 s on this shared machine). Rows: a small update-site file from the
// download host and a cached product page (both on the fast path: two additions per answer),
// and, as a data point, GET /healthz answered by the web app (the per-request hook of every
// route, at its largest share of a request that does nothing else). After each row the "on"
// server's page is scraped, to show it counted what wrk sent. Each row also prints the servers'
// CPU time per request (from /proc), which other work on a shared machine does not skew as it
// skews requests/s: its ratio off/on is what counting costs each answer.
import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadConfig } from '../src/infra/config.js';
import { openPublishingDatabase } from '../src/publishing/db.js';
import { productsRepository } from '../src/publishing/products/repository.js';
import { freePort, pierCli, pinToCpu, startPier, tempDir } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const TARGET = 0.95;

/** CPU time of a process so far (all its threads), in clock ticks (/proc/<pid>/stat utime + stime). */
function cpuTicks(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]);
}

interface Run {
  rps: number;
  /** Server CPU ticks per 1,000 requests. */
  cpu: number;
}

/** wrk (one thread, 32 connections, on CPU 0) against `url` served by process `pid`. */
function wrk(url: string, pid: number): Run {
  const before = cpuTicks(pid);
  const r = spawnSync('taskset', ['-c', '0', 'wrk', '-t1', '-c32', `-d${SECONDS}s`, url], { encoding: 'utf8' });
  const ticks = cpuTicks(pid) - before;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(r.stdout)?.[1] ?? 0);
  if (!rps || !requests || /Non-2xx|Socket errors/.test(r.stdout)) throw new Error(`wrk against ${url} failed:\n${r.stdout}${r.stderr}`);
  return { rps, cpu: (ticks / requests) * 1000 };
}

/** GET on a connection of its own: wrk runs block this process, so a kept connection may have been closed meanwhile. */
function getText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** The sum of a metric's samples whose labels include `labels` on a Prometheus text page. */
function sampleSum(page: string, name: string, labels: string[]): number {
  let sum = 0;
  for (const line of page.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (labels.every((l) => line.includes(l))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

interface Row {
  name: string;
  path: string;
  /** The counter on the "on" server's page that wrk's requests move. */
  counted: [name: string, labels: string[]];
}

export async function benchMetrics(): Promise<string> {
  for (const tool of ['wrk', 'taskset']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `skipped: ${tool} is not installed`;
  }
  const dataDir = tempDir('pier-bench-metrics-');
  const site = path.join(dataDir, 'storage', 'bench-ext', 'update-site', '5.4');
  fs.mkdirSync(site, { recursive: true });
  fs.writeFileSync(path.join(site, 'content.jar'), randomBytes(2_000));
  const [offHttp, offDownloads, onHttp, onDownloads] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // Each `pier serve` process has a metrics listener of its own.
  const [webMetrics, downloadsMetrics] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = { PIER_DATA_DIR: dataDir, PIER_DOWNLOAD_URL: 'https://downloads.example' };
  pierCli({ ...env, PIER_HTTP_PORT: String(offHttp) }, 'staff', 'register', 'text-tools', '--name', 'Text Tools', '--json');
  const database = await openPublishingDatabase(loadConfig(env).publishing.databaseUrl);
  await productsRepository(database.db, database.dialect).setState('text-tools', 'live', new Date().toISOString());
  await database.close();
  // Two processes each: the web app and the download host, as `pier serve --only` runs them.
  const started: ChildProcess[] = [];
  const start = async (httpPort: number, downloadPort: number, metrics: boolean) => {
    const own = { ...env, PIER_HTTP_PORT: String(httpPort), PIER_DOWNLOAD_PORT: String(downloadPort) };
    const web = await startPier({ ...own, ...(metrics ? { PIER_METRICS_PORT: String(webMetrics) } : {}) }, 'web', `http://127.0.0.1:${httpPort}/healthz`);
    started.push(web);
    // The download host alone in its process: a file it serves says it is up.
    const downloads = await startPier({ ...own, ...(metrics ? { PIER_METRICS_PORT: String(downloadsMetrics) } : {}) }, 'downloads', `http://127.0.0.1:${downloadPort}/bench-ext/5.4/content.jar`);
    started.push(downloads);
    return { web: web.pid as number, downloads: downloads.pid as number };
  };
  try {
    const off = await start(offHttp, offDownloads, false);
    const on = await start(onHttp, onDownloads, true);
    for (const child of started) pinToCpu(child.pid as number, 1);
    pinToCpu(process.pid, 0);
    const rows: Row[] = [
      { name: 'download host, small file 2 KB', path: '/bench-ext/5.4/content.jar', counted: ['pier_host_requests_total', ['host="downloads"']] },
      { name: 'cached product page', path: '/product/text-tools', counted: ['pier_host_requests_total', ['host="pages"']] },
      { name: 'GET /healthz by the app (data point)', path: '/healthz', counted: ['pier_http_requests_total', ['route="/healthz"']] },
    ];
    const lines = [`metrics on vs off, same data, each server on CPU 1, wrk -t1 -c32 on CPU 0, ${ROUNDS} x ${SECONDS} s alternating, median of paired ratios:`];
    for (const row of rows) {
      const downloads = row.path.startsWith('/bench-ext');
      const offUrl = `http://127.0.0.1:${downloads ? offDownloads : offHttp}${row.path}`;
      const onUrl = `http://127.0.0.1:${downloads ? onDownloads : onHttp}${row.path}`;
      const [offPid, onPid] = downloads ? [off.downloads, on.downloads] : [off.web, on.web];
      // Cached before measuring: the first request renders or reads the file.
      for (const url of [offUrl, onUrl]) await getText(url);
      const metricsUrl = `http://127.0.0.1:${downloads ? downloadsMetrics : webMetrics}/metrics`;
      const before = sampleSum(await getText(metricsUrl), ...row.counted);
      const pairs = Array.from({ length: ROUNDS }, (_, round) => {
        if (round % 2 === 0) {
          const o = wrk(offUrl, offPid);
          return [o, wrk(onUrl, onPid)] as const;
        }
        const n = wrk(onUrl, onPid);
        return [wrk(offUrl, offPid), n] as const;
      });
      const counted = sampleSum(await getText(metricsUrl), ...row.counted) - before;
      const range = (xs: number[]) => {
        const sorted = [...xs].sort((a, b) => a - b);
        return `${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)}`;
      };
      const ratios = pairs.map(([o, n]) => n.rps / o.rps);
      const ratio = median(ratios);
      const cpuRatios = pairs.map(([o, n]) => o.cpu / n.cpu);
      const verdict = row.path === '/healthz' ? '' : ratio >= TARGET ? ' PASS' : ' FAIL';
      lines.push(
        `  ${row.name}: off ${median(pairs.map(([o]) => o.rps)).toFixed(0)} req/s, on ${median(pairs.map(([, n]) => n.rps)).toFixed(0)} req/s, ` +
          `ratio on/off ${ratio.toFixed(2)} (rounds ${range(ratios)}; target >= ${TARGET})${verdict}`,
        `    server CPU per 1,000 requests: off ${median(pairs.map(([o]) => o.cpu)).toFixed(1)} ticks, on ${median(pairs.map(([, n]) => n.cpu)).toFixed(1)} ticks, ` +
          `ratio off/on ${median(cpuRatios).toFixed(2)} (rounds ${range(cpuRatios)}); answers counted on the "on" page: ${counted.toFixed(0)}`,
      );
    }
    return lines.join('\n');
  } finally {
    for (const child of started) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
