// Download host against nginx (Debian package, one worker, sendfile, no access log) serving the
// same stored files in the same run, each server on one core (every thread pinned) and the
// client on the other: requests/s for small update-site files (32 connections, BENCH_ROUNDS (5)
// rounds of BENCH_SECONDS (2) each, median of the paired ratios) and MB/s for one large file
// (BENCH_DOWNLOAD_MB, one download each to warm up, then BENCH_ROUNDS paired downloads). Ratios ours/nginx; target >= 0.7. Two more
// rows per small file are data points: node:http with the bytes in memory (the floor of any
// node:http handler) and a raw socket answering without parsing (what node:http itself costs).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, pinToCpu, tempDir } from './lib.js';

interface LoadResult {
  rps: number;
  p99: string;
  errors: number;
}

/**
 * wrk (C) as the load generator: autocannon's JavaScript parser tops out near 4k responses/s on
 * 30 KB of incompressible bytes, far below both servers, so it would measure itself.
 */
function load(opts: { url: string }): LoadResult {
  const r = spawnSync('taskset', ['-c', '0', 'wrk', '-t1', '-c32', `-d${SECONDS}s`, '--latency', opts.url], { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? 0);
  const p99 = /^\s+99%\s+(\S+)/m.exec(r.stdout)?.[1] ?? '?';
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0) + Number(/Socket errors: .*?(\d+)/.exec(r.stdout)?.[1] ?? 0);
  return { rps, p99, errors };
}

const LARGE_MB = Number(process.env.BENCH_DOWNLOAD_MB ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);

async function waitHttp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not come up`);
}

/** MB/s of one download of the large file with curl on CPU 0. */
function throughput(url: string): number {
  const r = spawnSync('taskset', ['-c', '0', 'curl', '-s', '-o', '/dev/null', '-w', '%{speed_download}', url], { encoding: 'utf8' });
  return Number(r.stdout) / 1024 / 1024;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The median of the paired ratios, with their range over the rounds. */
function ratioText(ratios: number[]): string {
  const sorted = [...ratios].sort((a, b) => a - b);
  return `ratio ${median(ratios).toFixed(2)} (rounds ${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)}; target >= 0.7)`;
}

function fmt(name: string, ours: LoadResult, ref: LoadResult, ratios: number[]): string {
  return `${name.padEnd(34)} Pier ${ours.rps.toFixed(0).padStart(7)} req/s (p99 ${ours.p99}, errors ${ours.errors})  nginx ${ref.rps.toFixed(0).padStart(7)} req/s (p99 ${ref.p99}, errors ${ref.errors})  ${ratioText(ratios)}`;
}

export async function benchDownloads(): Promise<string> {
  for (const tool of ['nginx', 'curl', 'taskset', 'wrk']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `skipped: ${tool} is not installed`;
  }
  const dataDir = tempDir('pier-bench-dl-');
  const storage = path.join(dataDir, 'storage');
  // A released label, as users get every label after its first release (releases/service.ts):
  // the download host reads the label's pointer on each request; nginx follows the same link.
  const site = path.join(storage, 'bench-ext', 'releases', '5.4', '1');
  fs.mkdirSync(path.join(site, 'plugins'), { recursive: true });
  fs.writeFileSync(path.join(site, 'content.jar'), randomBytes(2_000));
  fs.writeFileSync(path.join(site, 'plugins', 'org.example.b_1.0.0.jar'), randomBytes(30_000));
  // A feature jar: every complete GET of it goes to the counter (stats/counter.ts: once per client and day); the plug-in jar above does not.
  fs.mkdirSync(path.join(site, 'features'), { recursive: true });
  fs.writeFileSync(path.join(site, 'features', 'org.example.f_1.0.0.jar'), randomBytes(30_000));
  fs.symlinkSync('1', path.join(storage, 'bench-ext', 'releases', '5.4', 'current'));
  fs.mkdirSync(path.join(storage, 'bench-ext', 'update-site', '5.4'), { recursive: true });
  const fd = fs.openSync(path.join(storage, 'bench-ext', 'update-site', '5.4.zip'), 'w');
  for (let i = 0; i < LARGE_MB; i++) fs.writeSync(fd, randomBytes(1024 * 1024));
  // Written back now, not by the kernel in the middle of the measurements.
  fs.fsyncSync(fd);
  fs.closeSync(fd);

  const oursPort = await freePort();
  const ours: ChildProcess = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'downloads'], {
    env: { ...process.env, PIER_DATA_DIR: dataDir, PIER_DOWNLOAD_PORT: String(oursPort), PIER_LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  const nginxPort = await freePort();
  const nginxDir = path.join(dataDir, 'nginx');
  fs.mkdirSync(nginxDir);
  fs.writeFileSync(
    path.join(nginxDir, 'nginx.conf'),
    `daemon off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${nginxDir}/nginx.pid;
error_log ${nginxDir}/error.log warn;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  client_body_temp_path ${nginxDir}/body; proxy_temp_path ${nginxDir}/proxy; fastcgi_temp_path ${nginxDir}/fcgi; uwsgi_temp_path ${nginxDir}/uwsgi; scgi_temp_path ${nginxDir}/scgi;
  server {
    listen 127.0.0.1:${nginxPort};
    location /bench-ext/5.4/ { alias ${storage}/bench-ext/releases/5.4/current/; }
    location /bench-ext/ { alias ${storage}/bench-ext/update-site/; }
  }
}
`,
  );
  const nginx: ChildProcess = spawn('nginx', ['-c', path.join(nginxDir, 'nginx.conf'), '-p', nginxDir], { stdio: 'ignore' });
  const smallFiles = [
    ['small file 2 KB', '/bench-ext/5.4/content.jar', path.join(site, 'content.jar')],
    ['jar 30 KB', '/bench-ext/5.4/plugins/org.example.b_1.0.0.jar', path.join(site, 'plugins', 'org.example.b_1.0.0.jar')],
    // Counting's cost: the same size as the row above, each download counted (target: the same ratio within noise).
    ['feature jar 30 KB (counted)', '/bench-ext/5.4/features/org.example.f_1.0.0.jar', path.join(site, 'features', 'org.example.f_1.0.0.jar')],
  ] as const;
  // Not references but data points: what any node:http handler can reach here at most, and
  // what a socket answering without any HTTP parsing reaches (node:http's own cost).
  const floorArgs = smallFiles.map(([, p, f]) => `${p}=${f}`);
  const floorPort = await freePort();
  const floor: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'bench/downloads-floor.ts', 'http', String(floorPort), ...floorArgs], { stdio: 'ignore' });
  const rawFloors = await Promise.all(
    smallFiles.map(async (_, i) => {
      const port = await freePort();
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/downloads-floor.ts', 'net', String(port), floorArgs[i] as string], { stdio: 'ignore' });
      return { port, child };
    }),
  );
  const oursUrl = `http://127.0.0.1:${oursPort}`;
  const nginxUrl = `http://127.0.0.1:${nginxPort}`;
  const floorUrl = `http://127.0.0.1:${floorPort}`;
  try {
    await waitHttp(`${oursUrl}/bench-ext/5.4/content.jar`);
    await waitHttp(`${nginxUrl}/bench-ext/5.4/content.jar`);
    await waitHttp(`${floorUrl}/bench-ext/5.4/content.jar`);
    for (const r of rawFloors) await waitHttp(`http://127.0.0.1:${r.port}/`);
    pinToCpu(ours.pid as number, 1);
    pinToCpu(floor.pid as number, 1);
    for (const r of rawFloors) pinToCpu(r.child.pid as number, 1);
    // nginx's worker is a child of the master: pin every process of the group.
    spawnSync('sh', ['-c', `for p in $(pgrep -P ${nginx.pid}) ${nginx.pid}; do taskset -a -p -c 1 $p >/dev/null; done`]);
    pinToCpu(process.pid, 0);
    const lines: string[] = [];
    for (const [i, [name, p]] of smallFiles.entries()) {
      // Ours, the reference and the floors back to back, ROUNDS times: the ratio of each round
      // compares runs seconds apart, and the median of those ratios resists the noise of this
      // shared machine better than either side's best run.
      const rawUrl = `http://127.0.0.1:${rawFloors[i]?.port}${p}`;
      const runs = Array.from({ length: ROUNDS }, (_, round) => {
        // Who goes first alternates, so neither side always runs right after the other.
        const nginxFirst = round % 2 === 1 ? load({ url: nginxUrl + p }) : null;
        const ours = load({ url: oursUrl + p });
        const nginx = nginxFirst ?? load({ url: nginxUrl + p });
        return [ours, nginx, load({ url: floorUrl + p }), load({ url: rawUrl })] as const;
      });
      const middle = (k: 0 | 1 | 2 | 3) => {
        const sorted = [...runs].sort((a, b) => a[k].rps - b[k].rps);
        return (sorted[Math.floor(sorted.length / 2)] as (typeof runs)[number])[k];
      };
      const ofNginx = (k: 0 | 2 | 3) => median(runs.map((r) => r[k].rps / r[1].rps));
      lines.push(fmt(name, middle(0), middle(1), runs.map((r) => r[0].rps / r[1].rps)));
      lines.push(
        `${'  node:http floor (bytes in memory)'.padEnd(34)}      ${middle(2).rps.toFixed(0).padStart(7)} req/s  ${ofNginx(2).toFixed(2)} of nginx; Pier ${median(runs.map((r) => r[0].rps / r[2].rps)).toFixed(2)} of this floor`,
      );
      lines.push(`${'  raw socket, no HTTP parsing'.padEnd(34)}      ${middle(3).rps.toFixed(0).padStart(7)} req/s  ${ofNginx(3).toFixed(2)} of nginx`);
    }
    // Paired rounds as above, who goes first alternating, after one download each that is not
    // counted. That one also makes the file one Pier has sent whole lately, so the counted
    // rounds read it synchronously (send-file.ts), as any file downloaded before would be in
    // production. The second row is the first download after the file changed (a new ctime,
    // so a new ETag: thread-pool reads), each round.
    const largeUrls = [`${oursUrl}/bench-ext/5.4.zip`, `${nginxUrl}/bench-ext/5.4.zip`] as const;
    const largeFile = path.join(storage, 'bench-ext', 'update-site', '5.4.zip');
    const pairRounds = (before: () => void) =>
      Array.from({ length: ROUNDS }, (_, round) => {
        before();
        if (round % 2 === 0) return [throughput(largeUrls[0]), throughput(largeUrls[1])] as const;
        const nginxFirst = throughput(largeUrls[1]);
        return [throughput(largeUrls[0]), nginxFirst] as const;
      });
    const largeRow = (name: string, pairs: (readonly [number, number])[]) =>
      `${name.padEnd(34)} Pier ${median(pairs.map(([o]) => o)).toFixed(0).padStart(7)} MB/s  nginx ${median(pairs.map(([, n]) => n)).toFixed(0).padStart(7)} MB/s  ${ratioText(pairs.map(([o, n]) => o / n))}`;
    for (const url of largeUrls) throughput(url);
    lines.push(largeRow(`large file ${LARGE_MB} MB`, pairRounds(() => {})));
    const touch = () => {
      const st = fs.statSync(largeFile);
      fs.utimesSync(largeFile, st.atime, st.mtime);
    };
    lines.push(largeRow('  first download after a change', pairRounds(touch)));
    return lines.join('\n');
  } finally {
    ours.kill('SIGTERM');
    nginx.kill('SIGTERM');
    floor.kill('SIGTERM');
    for (const r of rawFloors) r.child.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
