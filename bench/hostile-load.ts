// `npm run bench hostile-load`: does one hostile vendor slow the download host down for
// everyone? One `pier serve --only web,downloads,sftp` process (SQLite, free loopback ports,
// the automatic crawl on) serves a steady download load and another product's page in
// BENCH_ROUNDS rounds (3) of quiet, then attacked while a hostile vendor (bench/hostile-attack.ts, its own process) at once has an xz-bomb label and a
// pure-Python label with a quadratic-looking module crawled by the automatic crawl (re-uploaded
// after each crawl), stores a changelog of 2,000 items citing 2,000 link reference definitions
// and asks for its page after each PATCH, holds every SFTP handle it may while sending
// OPENs the cap refuses and listing a folder of 5,000 entries over and over, and asks for the
// stats of 300 labels installed every day of a year in a loop (bench/hostile-stats.ts).
//
// The load is open-loop at a fixed rate (BENCH_HOSTILE_RATE, 200 req/s: a 4 KiB asset, every
// tenth request a 1 MiB one) and each latency counts from the request's scheduled time, so a
// stalled server shows as the stall, not as fewer requests (autocannon and wrk send the next
// request only after an answer). Requests unanswered BENCH_HOSTILE_GRACE seconds (5) after the
// run count with the time they waited so far, and as unfinished. Target: the median of the
// rounds' p99 under attack / quiet within 2x, no errors, nothing unfinished, in any round.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import type { AttackPlan } from './hostile-attack.js';
import { buildPythonSite, buildXzBomb, connectSftp, mkdirMany, putFile, type SftpConnection } from './hostile-fixtures.js';
import { statsLine } from './hostile-stats.js';
import { folderIndexLine } from './hostile-folder-index.js';
import { describeRelease } from './hostile-release.js';
import { freePort, pierCli, tempDir } from './lib.js';
import { catalogLines, readyCatalog, seedCatalog } from './hostile-catalog.js';
import { type PageRun, pageRow, steadyPage } from './hostile-steady.js';

const SECONDS = Number(process.env.BENCH_HOSTILE_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_HOSTILE_RATE ?? 200);
const GRACE_S = Number(process.env.BENCH_HOSTILE_GRACE ?? 5);
const FOLDER_ENTRIES = Number(process.env.BENCH_HOSTILE_FOLDER_ENTRIES ?? 5_000);
/** Which attacks run together (a subset helps find which one hurts). */
const ATTACKS = (process.env.BENCH_HOSTILE_ATTACKS ?? 'crawl,page,sftp,stats,folder-index,catalog,search,release').split(',') as AttackPlan['attacks'];
const CHANGELOG_ITEMS = 2_000;
const PYTHON_MODULE_BYTES = 100 * 1024;
const TARGET = 2;
/** Quiet-then-attacked rounds; the verdict is the median of their ratios. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** After the attacker's preparation (uploads, a first release and its crawl), before the first quiet round. */
const SETTLE_MS = 3_000;
/** Nice value of the attacker process (see where it starts). */
const ATTACKER_NICE = 10;
const SMALL = 4 * 1024;
const LARGE = 1024 * 1024;

interface Run {
  sent: number;
  done: number;
  errors: number;
  unfinished: number;
  /** Requests answered per second over the run and its drain. */
  rps: number;
  p50: number;
  p99: number;
  max: number;
  firstError: string | null;
}

/** Nearest-rank percentile of sorted values. */
const pct = (sorted: number[], p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;

/** GETs of the two assets at `RATE` for `seconds`, latency from each request's scheduled start. */
async function steadyLoad(downloadUrl: string, seconds = SECONDS): Promise<Run> {
  const { hostname, port } = new URL(downloadUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const latencies: number[] = [];
  const inFlight = new Map<http.ClientRequest, number>();
  const run: Run = { sent: 0, done: 0, errors: 0, unfinished: 0, rps: 0, p50: 0, p99: 0, max: 0, firstError: null };
  const fail = (why: string) => {
    run.errors++;
    run.firstError ??= why;
  };
  const total = Math.round(seconds * RATE);
  const start = performance.now();
  const fire = (i: number) => {
    const scheduled = start + (i * 1000) / RATE;
    const large = i % 10 === 9;
    const req = http.get({ agent, hostname, port, path: `/assets/steady-ext/${large ? 'large' : 'small'}.bin` }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      res.on('end', () => {
        inFlight.delete(req);
        latencies.push(performance.now() - scheduled);
        run.done++;
        if (res.statusCode !== 200) fail(`HTTP ${res.statusCode}`);
        else if (bytes !== (large ? LARGE : SMALL)) fail(`${bytes} bytes instead of ${large ? LARGE : SMALL}`);
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
      const due = Math.min(total, Math.floor(((performance.now() - start) * RATE) / 1000) + 1);
      while (run.sent < due) fire(run.sent);
      if (run.sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, 2);
  });
  for (const until = performance.now() + GRACE_S * 1000; inFlight.size && performance.now() < until; ) await new Promise((r) => setTimeout(r, 20));
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

function row(name: string, r: Run): string {
  const bad = r.errors || r.unfinished ? `  errors ${r.errors}, unfinished ${r.unfinished}${r.firstError ? ` (${r.firstError})` : ''}` : '  no errors';
  return `${name.padEnd(34)} ${r.rps.toFixed(0).padStart(5)} req/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  max ${ms(r.max)}${bad}`;
}

/** `pier` in a child process, without blocking this one (lib's pierCli waits synchronously). */
function pierCliAsync(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/pier.js', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`pier ${args.join(' ')} failed: ${err}`))));
  });
}

async function retry<T>(what: string, work: () => Promise<T>, seconds = 20): Promise<T> {
  for (const until = Date.now() + seconds * 1000; ; ) {
    try {
      return await work();
    } catch (e) {
      if (Date.now() > until) throw new Error(`${what}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Peak resident memory of a process, from /proc (Linux); null elsewhere. */
function peakRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

async function stop(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  // A process whose event loop is blocked cannot act on SIGTERM.
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Error-level lines of the server's log (pino JSON), counted, with the first few distinct messages. */
function serverErrors(logFile: string): string {
  const msgs = new Map<string, number>();
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    try {
      const o = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
      if ((o.level ?? 0) < 50) continue;
      const key = `${o.msg ?? ''}${o.err?.message ? `: ${o.err.message.slice(0, 100)}` : ''}`;
      msgs.set(key, (msgs.get(key) ?? 0) + 1);
    } catch {
      // not a log line
    }
  }
  if (msgs.size === 0) return 'none';
  return [...msgs].slice(0, 3).map(([m, n]) => `${n}x "${m}"`).join('; ') + (msgs.size > 3 ? `; ${msgs.size - 3} more kinds` : '');
}

export async function benchHostileLoad(): Promise<string> {
  if (spawnSync('sh', ['-c', 'command -v xz']).status !== 0) return 'skipped: xz is not installed';
  const work = tempDir('pier-bench-hostile-');
  const [httpPort, downloadPort, sftpPort] = [await freePort(), await freePort(), await freePort()];
  const webUrl = `http://127.0.0.1:${httpPort}`;
  const downloadUrl = `http://127.0.0.1:${downloadPort}`;
  const env: NodeJS.ProcessEnv = {
    PIER_DATA_DIR: path.join(work, 'data'),
    PIER_HTTP_PORT: String(httpPort),
    PIER_DOWNLOAD_PORT: String(downloadPort),
    PIER_SFTP_PORT: String(sftpPort),
    PIER_BASE_URL: webUrl,
    // The crawler reads what users get: the download host of this same process.
    PIER_DOWNLOAD_URL: downloadUrl,
    // The automatic crawl, inside the serving process, picks up a label a second after its upload.
    PIER_CRAWL_SETTLE_SECONDS: '1',
    // Room for the large folder where folders count against a quota.
    PIER_QUOTA_FOLDERS: String(FOLDER_ENTRIES + 100),
    PIER_LOG_LEVEL: 'warn',
  };
  const started = performance.now();
  // The first registration creates the database; the second runs while the server starts.
  const steady = JSON.parse(pierCli(env, 'staff', 'register', 'steady-ext', '--name', 'Steady', '--json'));
  const catalog = ATTACKS.includes('catalog') || ATTACKS.includes('search') ? await seedCatalog(env) : null;
  const logFile = path.join(work, 'server.log');
  const log = fs.openSync(logFile, 'w');
  // BENCH_PROFILE_DIR: a V8 CPU profile of the server (each thread) is written there at exit.
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const server = spawn(process.execPath, [...profile, 'bin/pier.js', 'serve', '--only', 'web,downloads,sftp'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', log, log],
  });
  let attacker: ChildProcess | null = null;
  const conns: SftpConnection[] = [];
  try {
    const registering = pierCliAsync(env, 'staff', 'register', 'hostile-ext', '--name', 'Hostile', '--json');
    // Awaited below; handled now so a failure of the set-up in between is the error reported.
    registering.catch(() => {});
    const bombDir = path.join(work, 'bomb');
    const pyDir = path.join(work, 'py');
    const labels: AttackPlan['labels'] = [
      { label: 'bomb', dir: bombDir, files: buildXzBomb(bombDir), reupload: ['content.xml.xz'] },
      { label: 'py', dir: pyDir, files: buildPythonSite(pyDir, PYTHON_MODULE_BYTES), reupload: ['plugins/org.hostile.py_1.0.0.v20260101.jar'] },
    ];
    const xzBytes = fs.statSync(path.join(bombDir, 'content.xml.xz')).size;
    const hostile = JSON.parse(await registering);
    await retry('pier serve did not come up', async () => {
      if (!(await fetch(`${webUrl}/healthz`)).ok) throw new Error('not healthy');
    });
    const setup = await retry('SFTP', () => connectSftp(sftpPort, steady.sftp.username, steady.sftp.password));
    conns.push(setup);
    await putFile(setup.sftp, '/assets/small.bin', randomBytes(SMALL));
    await putFile(setup.sftp, '/assets/large.bin', randomBytes(LARGE));
    const vendor = await connectSftp(sftpPort, hostile.sftp.username, hostile.sftp.password);
    conns.push(vendor);
    await putFile(vendor.sftp, '/assets/f.bin', randomBytes(1024));
    await new Promise<void>((resolve, reject) => vendor.sftp.mkdir('/assets/big', (e) => (e ? reject(e) : resolve())));
    await mkdirMany(
      vendor.sftp,
      '/assets/big',
      Array.from({ length: FOLDER_ENTRIES }, (_, i) => `entry-${String(i).padStart(6, '0')}`),
    );
    for (const c of conns.splice(0)) c.end();
    if (catalog) await readyCatalog(webUrl, sftpPort, catalog);
    const setupS = (performance.now() - started) / 1000;
    // Not counted: the server's first requests pay for compiling its code paths.
    const otherPage = () => steadyPage(`${webUrl}/product/steady-ext`, 'Steady', SECONDS, GRACE_S);
    await Promise.all([steadyLoad(downloadUrl, 2), steadyPage(`${webUrl}/product/steady-ext`, 'Steady', 2, GRACE_S)]);

    const plan: AttackPlan = {
      seconds: SECONDS,
      webUrl,
      sftpPort,
      productId: 'hostile-ext',
      token: hostile.editToken,
      username: hostile.sftp.username,
      password: hostile.sftp.password,
      attacks: ATTACKS,
      databaseUrl: path.join(work, 'data', 'pier.sqlite'),
      labels,
      changelogItems: CHANGELOG_ITEMS,
      smallFile: '/assets/f.bin',
      bigFolder: '/assets/big',
      catalog: catalog?.plan,
    };
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/hostile-attack.ts', JSON.stringify(plan)], { stdio: ['pipe', 'pipe', 'inherit'] });
    // The attacker's own CPU (SSH crypto, building requests) would be on another machine in
    // life: here it runs at a lower priority so that it loads the server, not the measurement.
    if (child.pid) os.setPriority(child.pid, ATTACKER_NICE);
    attacker = child;
    const lines: string[] = [];
    const waiters: { line: string; resolve: () => void }[] = [];
    let partial = '';
    child.stdout?.on('data', (c) => {
      partial += c;
      for (let i = partial.indexOf('\n'); i >= 0; i = partial.indexOf('\n')) {
        const line = partial.slice(0, i);
        partial = partial.slice(i + 1);
        lines.push(line);
        for (const w of waiters.filter((x) => x.line === line)) w.resolve();
      }
    });
    const attackerDone = new Promise((r) => child.once('exit', r));
    /** Resolves when the attacker prints `line` (its `ready` before the attacks, `done` after each phase). */
    const said = (line: string, what: string) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the attacker process did not say ${what} in 180 s`)), 180_000);
        waiters.push({
          line,
          resolve: () => {
            clearTimeout(timer);
            waiters.splice(0);
            resolve();
          },
        });
        void attackerDone.then(() => reject(new Error(`the attacker process ended before it said ${what}`)));
      });
    // Logged in, handles held, labels staged: the attacks themselves start with the load.
    await said('ready', 'ready');
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    // Alternating quiet and attacked rounds, as bench runner-hostile does: on a shared 2-core
    // machine a p99 is decided by a handful of stalls, and the first attacked round also pays
    // for compiling the attacked code paths; the median of the rounds' ratios is the verdict.
    const rounds: { quiet: Run; quietPage: PageRun; attack: Run; attackPage: PageRun }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const [quiet, quietPage] = await Promise.all([steadyLoad(downloadUrl), otherPage()]);
      const phaseDone = said('done', `done after round ${round + 1}`);
      child.stdin?.write('go\n');
      const [attack, attackPage] = await Promise.all([steadyLoad(downloadUrl), otherPage()]);
      await phaseDone;
      rounds.push({ quiet, quietPage, attack, attackPage });
    }
    child.stdin?.end();
    await Promise.race([attackerDone, new Promise((r) => setTimeout(r, 5_000))]);
    const out = lines.filter((l) => l.startsWith('{')).pop() ?? '';
    const rss = peakRssMb(server.pid as number);
    let what: string[];
    try {
      const r = JSON.parse(out.trim().split('\n').pop() ?? '');
      what = [
        ATTACKS.includes('crawl') &&
          `  crawl (automatic, in the server): labels changed ${r.crawl.uploads}x, ${r.crawl.finished} label crawls finished${r.crawl.finished ? ` (slowest ${(r.crawl.longestMs / 1000).toFixed(1)} s from the change)` : ''}${r.crawl.waiting ? `, still waiting for ${r.crawl.waiting}` : ''}; problems reported: ${r.crawl.problems.join(', ') || 'none'}${r.crawl.error ? `; stopped: ${r.crawl.error}` : ''}`,
        ATTACKS.includes('page') &&
          `  page: ${r.page.patches} PATCHes stored, ${r.page.renders} page GETs answered${r.page.renders ? ` (slowest ${(r.page.longestMs / 1000).toFixed(1)} s)` : ''}${r.page.waitingMs ? `, one GET unanswered after ${(r.page.waitingMs / 1000).toFixed(1)} s` : ''}${r.page.refused ? `; PATCH refused: ${r.page.refused}` : ''}${r.page.error ? `; stopped: ${r.page.error}` : ''}`,
        ATTACKS.includes('sftp') &&
          `  sftp: ${r.sftp.held} handles held, ${r.sftp.refusedOpens} OPENs refused, ${r.sftp.acceptedOpens} accepted over the cap, ${r.sftp.readdirs} READDIRs, ${r.sftp.listings} full listings${r.sftp.error ? `; stopped: ${r.sftp.error}` : ''}`,
        ATTACKS.includes('stats') && statsLine(r.stats),
        ATTACKS.includes('folder-index') && folderIndexLine(r['folder-index']),
        ...catalogLines(r.catalog ? r : undefined, ATTACKS),
        ATTACKS.includes('release') && describeRelease(r.release),
      ].filter((l): l is string => typeof l === 'string');
    } catch {
      what = ['  the attacker process reported nothing'];
    }
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const ratios = rounds.map((r) => r.attack.p99 / r.quiet.p99);
    const pageRatios = rounds.map((r) => r.attackPage.p99 / r.quietPage.p99);
    const ratio = median(ratios);
    const pageRatio = median(pageRatios);
    const failed = rounds.some((r) => r.attack.errors > 0 || r.attack.unfinished > 0);
    const pageFailed = rounds.some((r) => r.attackPage.errors > 0 || r.attackPage.unfinished > 0);
    const verdict = (x: number, bad: boolean, what: string) => (x <= TARGET && !bad ? 'PASS' : `FAIL${x <= TARGET ? ` (${what} failed or went unanswered)` : ''}`);
    return [
      `steady downloads: ${RATE} req/s for ${SECONDS} s (4 KiB asset, every 10th request 1 MiB), latency from the scheduled send; one pier serve --only web,downloads,sftp (SQLite); setup ${setupS.toFixed(0)} s; ${ROUNDS} rounds of quiet then attacked`,
      `hostile vendor: ${ATTACKS.join(' + ')} (xz bomb ${(xzBytes / 1024).toFixed(1)} KB -> 16 MiB of <p/>, Python module ${PYTHON_MODULE_BYTES / 1024} KB of "@knext.node((", changelog ${CHANGELOG_ITEMS} items + ${CHANGELOG_ITEMS} link definitions, folder of ${FOLDER_ENTRIES} entries)`,
      ...rounds.flatMap((r, i) => [
        `  round ${i + 1}: downloads p99 ratio ${ratios[i]!.toFixed(2)}, page p99 ratio ${pageRatios[i]!.toFixed(2)}`,
        row('  quiet', r.quiet),
        row('  under attack', r.attack),
        pageRow("  another product's page, quiet", r.quietPage),
        pageRow("  another product's page, attack", r.attackPage),
      ]),
      '  what the attacker got done, over all rounds:',
      ...what,
      `server: peak RSS ${rss === null ? '?' : `${rss.toFixed(0)} MB`}; error log lines: ${serverErrors(logFile)}`,
      `downloads: median p99 under attack / quiet ${ratio.toFixed(2)} (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}; target <= ${TARGET.toFixed(2)}, no errors): ${verdict(ratio, failed, 'downloads')}`,
      `another product's page: median p99 under attack / quiet ${pageRatio.toFixed(2)} (rounds ${pageRatios.map((x) => x.toFixed(2)).join(', ')}; target <= ${TARGET.toFixed(2)}, no errors): ${verdict(pageRatio, pageFailed, 'pages')}`,
    ].join('\n');
  } finally {
    for (const c of conns) c.end();
    if (attacker) await stop(attacker, 1_000);
    await stop(server, process.env.BENCH_PROFILE_DIR ? 30_000 : 3_000);
    fs.closeSync(log);
    fs.rmSync(work, { recursive: true, force: true });
  }
}
