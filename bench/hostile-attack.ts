// Child of `npm run bench hostile-load`: one hostile vendor (and the anonymous visitors of its
// page) working against `pier serve`, in its own process so the bench's download clients do
// not share an event loop with it. It first gets ready (logs in, holds its SFTP handles,
// stages its labels outside update-site/) and says `ready`; on each `go` line (stdin) it
// attacks for `seconds`, then prints one JSON line saying what it got done so far (counts add up
// over the phases), whether or not the server still answers, and once its attacks have wound
// down a `done` line; the bench measures a quiet round only after that. It exits when stdin ends.
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';
import { call, connectSftp, hostileChangelog, putFile } from './hostile-fixtures.js';
import { seedStats, statsAttack, statsReport } from './hostile-stats.js';
import { folderIndexAttack, folderIndexReport, prepareFolderIndex } from './hostile-folder-index.js';
import { type CatalogPlan, catalogAttacks, catalogDeadline, catalogReport } from './hostile-catalog.js';
import { prepareRelease, releaseAttack, releaseReport } from './hostile-release.js';
import { boundFetch } from './bound-fetch.js';

export interface AttackPlan {
  /** How long the attack lasts after `go`. */
  seconds: number;
  webUrl: string;
  sftpPort: number;
  productId: string;
  token: string;
  username: string;
  password: string;
  /** The server's publishing database (the stats attack seeds its counts there). */
  databaseUrl: string;
  attacks: ('crawl' | 'page' | 'sftp' | 'stats' | 'folder-index' | 'catalog' | 'search' | 'release')[];
  /** The big node catalog (bench/hostile-catalog.ts), for the catalog and search attacks. */
  catalog?: CatalogPlan;
  /** Local folders of the hostile labels and the files to upload from each. */
  labels: { label: string; dir: string; files: string[]; reupload: string[] }[];
  changelogItems: number;
  /** A file and a large folder of the product, for the handle abuse. */
  smallFile: string;
  bigFolder: string;
}

const plan = JSON.parse(process.argv[2] as string) as AttackPlan;
// Every HTTP request of the attack comes from 127.0.0.2, as from another machine (bench/bound-fetch.ts).
globalThis.fetch = boundFetch('127.0.0.2');
const { STATUS_CODE } = ssh2.utils.sftp;
const MAX_HANDLES = 64;
let deadline = Number.POSITIVE_INFINITY;
const live = () => Date.now() < deadline;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const auth = { authorization: `Bearer ${plan.token}` };
const short = (e: unknown) => String((e as Error)?.message ?? e).slice(0, 160);

const report = {
  crawl: {
    /** Times the labels were moved in or uploaded again. */
    uploads: 0,
    /** Crawls of a hostile label that finished (as the vendor's crawl report shows them). */
    finished: 0,
    longestMs: 0,
    problems: [] as string[],
    /** Labels whose crawl was still awaited at the deadline, and for how long. */
    waiting: null as string | null,
    error: null as string | null,
  },
  page: { patches: 0, refused: null as string | null, renders: 0, longestMs: 0, waitingMs: 0, error: null as string | null },
  sftp: { held: 0, refusedOpens: 0, acceptedOpens: 0, readdirs: 0, listings: 0, error: null as string | null },
  stats: statsReport(),
  'folder-index': folderIndexReport,
  ...catalogReport,
  release: releaseReport(),
};

/** What the attacks were waiting for when the deadline came (reported with how long). */
let crawlAwaited: { labels: Set<string>; since: number } | null = null;
let pageStarted = 0;

async function uploadLabel(sftp: ssh2.SFTPWrapper, label: string, dir: string, files: string[]): Promise<void> {
  for (const f of files) await putFile(sftp, `/update-site/${label}/${f}`, fs.readFileSync(path.join(dir, f)));
}

const staged = (label: string) => `/workflows/staged-${label}`;

/** Uploads the hostile labels where nothing crawls them (a folder under workflows/). */
async function stageLabels(sftp: ssh2.SFTPWrapper): Promise<void> {
  for (const l of plan.labels) {
    for (const f of l.files) {
      const remote = `${staged(l.label)}/${f}`;
      for (let d = path.posix.dirname(remote), todo: string[] = []; ; d = path.posix.dirname(d)) {
        if (d === '/workflows') {
          for (const t of todo.reverse()) await call((cb) => sftp.mkdir(t, cb)).catch(() => {});
          break;
        }
        todo.push(d);
      }
      await putFile(sftp, remote, fs.readFileSync(path.join(l.dir, f)));
    }
  }
}

/**
 * Moves the staged labels into update-site/ (a change of each label: the automatic crawl reads
 * it once settled), waits until the crawl report shows both read, uploads them again, and so on.
 */
async function crawlAttack(sftp: ssh2.SFTPWrapper, first: boolean): Promise<void> {
  if (first) for (const l of plan.labels) await call((cb) => sftp.rename(staged(l.label), `/update-site/${l.label}`, cb));
  const problems = new Set<string>();
  while (live()) {
    const uploadedAt = Date.now();
    report.crawl.uploads++;
    const pending = new Set(plan.labels.map((l) => l.label));
    crawlAwaited = { labels: pending, since: uploadedAt };
    while (pending.size && live()) {
      const res = await fetch(`${plan.webUrl}/api/products/${plan.productId}/crawl`, { headers: auth });
      if (!res.ok) throw new Error(`crawl report: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { labels: { label: string; status: string; stale: boolean; finishedAt: string | null; problems: { severity: string; code: string }[] }[] };
      for (const c of body.labels) {
        if (!pending.has(c.label) || c.status !== 'finished' || c.stale) continue;
        pending.delete(c.label);
        report.crawl.finished++;
        report.crawl.longestMs = Math.max(report.crawl.longestMs, Date.parse(c.finishedAt ?? '') - uploadedAt);
        for (const p of c.problems) problems.add(`${c.label}: ${p.severity} ${p.code}`);
        report.crawl.problems = [...problems];
      }
      if (pending.size) await sleep(250);
    }
    crawlAwaited = null;
    // A replacement is a change of the label: the automatic crawl reads it again once settled.
    for (const l of plan.labels) await uploadLabel(sftp, l.label, l.dir, l.reupload);
  }
}


/** Stores a hostile changelog and asks for the page (hidden pages are public), in turn. */
async function pageAttack(): Promise<void> {
  for (let variant = 0; live(); variant++) {
    const patch = await fetch(`${plan.webUrl}/api/products/${plan.productId}`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ changelog: hostileChangelog(plan.changelogItems, variant) }),
    });
    const text = await patch.text();
    if (patch.ok) report.page.patches++;
    else report.page.refused ??= `${patch.status} ${text.slice(0, 200)}`;
    pageStarted = Date.now();
    const page = await fetch(`${plan.webUrl}/product/${plan.productId}`);
    await page.arrayBuffer();
    if (!page.ok) throw new Error(`GET /product/${plan.productId}: ${page.status}`);
    report.page.renders++;
    report.page.longestMs = Math.max(report.page.longestMs, Date.now() - pageStarted);
    pageStarted = 0;
    // Refused: nothing new to render, so no reason to hurry.
    if (!patch.ok) await sleep(250);
  }
}

const open = (sftp: ssh2.SFTPWrapper, p: string, mode: 'r' | 'w') => call<Buffer>((cb) => sftp.open(p, mode, cb));
const opendir = (sftp: ssh2.SFTPWrapper) => call<Buffer>((cb) => sftp.opendir(plan.bigFolder, cb));

/** Opens as many handles as the session allows: half listings of the large folder, half a file. */
async function holdHandles(sftp: ssh2.SFTPWrapper): Promise<Buffer[]> {
  const dirs: Buffer[] = [];
  for (let i = 0; i < MAX_HANDLES / 2; i++) dirs.push(await opendir(sftp));
  report.sftp.held = dirs.length;
  for (let held = dirs.length; held < MAX_HANDLES; held++) {
    try {
      await open(sftp, plan.smallFile, 'r');
    } catch {
      break;
    }
    report.sftp.held = held + 1;
  }
  return dirs;
}

/**
 * In a loop: a burst of OPENs the handle cap refuses (half for writing), then one READDIR on
 * each listing; a listing read to its end is closed and opened again, so the large folder is
 * listed again and again.
 */
async function sftpAttack(sftp: ssh2.SFTPWrapper, dirs: Buffer[]): Promise<void> {
  for (let round = 0; live(); round++) {
    await Promise.all(
      Array.from({ length: MAX_HANDLES }, (_, i) =>
        open(sftp, i % 2 ? plan.smallFile : `/assets/new-${round}-${i}.bin`, i % 2 ? 'r' : 'w').then(
          (h) => {
            report.sftp.acceptedOpens++;
            return call((cb) => sftp.close(h, cb));
          },
          () => {
            report.sftp.refusedOpens++;
          },
        ),
      ),
    );
    await Promise.all(
      dirs.map(async (h, i) => {
        const entries = await call<unknown[]>((cb) => sftp.readdir(h, cb)).catch((e: Error & { code?: number }) => {
          if (e.code === STATUS_CODE.EOF) return null;
          throw e;
        });
        report.sftp.readdirs++;
        if (entries) return;
        report.sftp.listings++;
        await call((cb) => sftp.close(h, cb));
        dirs[i] = await opendir(sftp);
      }),
    );
  }
}

/** Runs one attack (or its preparation); a failure is reported and ends only that attack. */
async function attempt<T>(name: keyof typeof report, work: () => Promise<T>): Promise<T | null> {
  try {
    return await work();
  } catch (e) {
    report[name].error = short(e);
    return null;
  }
}

const wanted = new Set(plan.attacks);
const connect = () => connectSftp(plan.sftpPort, plan.username, plan.password);
const [uploader, abuser, , indexUrl, releaser] = await Promise.all([
  wanted.has('crawl')
    ? attempt('crawl', async () => {
        const conn = await connect();
        await stageLabels(conn.sftp);
        return conn;
      })
    : null,
  wanted.has('sftp')
    ? attempt('sftp', async () => {
        const conn = await connect();
        return { conn, dirs: await holdHandles(conn.sftp) };
      })
    : null,
  wanted.has('stats') ? attempt('stats', () => seedStats(plan, report.stats)) : null,
  wanted.has('folder-index')
    ? attempt('folder-index', async () => {
        const conn = await connect();
        try {
          return await prepareFolderIndex(plan, conn.sftp);
        } finally {
          conn.end();
        }
      })
    : null,
  wanted.has('release')
    ? attempt('release', async () => {
        const conn = await connect();
        await prepareRelease(conn.sftp, plan, report.release);
        return conn;
      })
    : null,
]);
process.stdout.write('ready\n');

/** One attack phase: every attack until the deadline. */
const phase = (first: boolean) =>
  Promise.all([
    uploader && attempt('crawl', () => crawlAttack(uploader.sftp, first)),
    wanted.has('page') && attempt('page', pageAttack),
    abuser && attempt('sftp', () => sftpAttack(abuser.conn.sftp, abuser.dirs)),
    wanted.has('stats') && attempt('stats', () => statsAttack(plan, live, report.stats)),
    indexUrl && attempt('folder-index', () => folderIndexAttack(indexUrl, live)),
    ...catalogAttacks(plan.webUrl, plan.catalog, wanted, live),
    releaser && attempt('release', () => releaseAttack(releaser.sftp, plan, report.release, live)),
  ]);

/** At most this long after a deadline for the attacks' last requests to come back. */
const WIND_DOWN_MS = 10_000;
let phases = 0;
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) {
  for (const line of String(chunk).split('\n')) {
    if (line.trim() !== 'go') continue;
    deadline = Date.now() + plan.seconds * 1000;
    const running = phase(phases++ === 0);
    await new Promise((r) => setTimeout(r, plan.seconds * 1000));
    // Reported at the deadline, whatever is still waiting for the server.
    if (pageStarted) report.page.waitingMs = Date.now() - pageStarted;
    catalogDeadline();
    // Set by crawlAttack while it runs (the compiler does not see that across the await).
    const awaited = crawlAwaited as { labels: Set<string>; since: number } | null;
    if (awaited?.labels.size) report.crawl.waiting = `${[...awaited.labels].join(', ')} for ${((Date.now() - awaited.since) / 1000).toFixed(1)} s`;
    process.stdout.write(`${JSON.stringify(report)}\n`);
    await Promise.race([running, new Promise((r) => setTimeout(r, WIND_DOWN_MS))]);
    process.stdout.write('done\n');
  }
}
process.exit(0);
