// The `release` attack of `npm run bench hostile-load` (run by bench/hostile-attack.ts): the
// hostile vendor's label `big` holds a small valid update site and BENCH_HOSTILE_RELEASE_FILES
// (20,000) more files in one flat folder (the default file quota allows 100,000), and is released
// over and over with one file changed each time. Each release copies the label (one hard link per
// file), crawls the copy, moves the label and prunes the oldest kept release (as many unlinks),
// then counts what the releases hold for the quota; none of it may hold the server's event loop.
// The download host has a process of its own, so the bench's steady downloads would not see the
// web process stall: this attack also probes the web process's `/healthz` (PROBE_RATE a second,
// latency from the scheduled send) for a few seconds before it uploads anything (quiet) and
// while it releases, and reports both p99s.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type ssh2 from 'ssh2';
import { buildSite, exampleSpec } from '../test/helpers/p2-fixtures.js';
import { call, putFile } from './hostile-fixtures.js';

export const RELEASE_FILES = Number(process.env.BENCH_HOSTILE_RELEASE_FILES ?? 20_000);
const LABEL = 'big';
const STAGED = `/workflows/staged-${LABEL}`;
/** Uploads in flight at once while the label is prepared. */
const WINDOW = 64;
/** `/healthz` requests a second of the web-process probe, and how long its quiet run lasts. */
const PROBE_RATE = 20;
const QUIET_PROBE_S = 5;

export interface ReleaseReport {
  /** Files of the label, the update site's included. */
  files: number;
  releases: number;
  refused: number;
  /** The slowest release call, from the POST to its answer. */
  longestMs: number;
  /** A release call still unanswered at the deadline, for how long. */
  waitingMs: number;
  /** The web process's `/healthz` before the attack and during it. */
  quietProbe: Probe | null;
  probe: Probe | null;
  error: string | null;
}

export interface Probe {
  count: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
}

export const releaseReport = (): ReleaseReport => ({ files: 0, releases: 0, refused: 0, longestMs: 0, waitingMs: 0, quietProbe: null, probe: null, error: null });

/**
 * GETs `<webUrl>/healthz` PROBE_RATE times a second until `live` says stop (open loop: a stalled
 * server shows as the stall); requests unanswered at the end count with the time waited so far.
 */
async function probe(webUrl: string, live: () => boolean, into: (p: Probe) => void): Promise<void> {
  const { hostname, port } = new URL(webUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const latencies: number[] = [];
  const pending = new Map<http.ClientRequest, number>();
  let errors = 0;
  const start = performance.now();
  const report = () => {
    const now = performance.now();
    const all = [...latencies, ...[...pending.values()].map((t) => now - t)].sort((a, b) => a - b);
    const at = (q: number) => all[Math.max(0, Math.ceil(q * all.length) - 1)] ?? 0;
    into({ count: all.length, p50: at(0.5), p99: at(0.99), max: all.at(-1) ?? 0, errors });
  };
  // Also while nothing answers: a stall must show in the report printed at the deadline.
  const tick = setInterval(report, 200);
  for (let i = 0; live(); i++) {
    const scheduled = start + (i * 1000) / PROBE_RATE;
    const wait = scheduled - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const req = http.get({ agent, hostname, port, path: '/healthz' }, (res) => {
      res.resume();
      res.on('end', () => {
        if (!pending.delete(req)) return;
        latencies.push(performance.now() - scheduled);
        if (res.statusCode !== 200) errors++;
        report();
      });
    });
    req.on('error', () => {
      if (!pending.delete(req)) return;
      latencies.push(performance.now() - scheduled);
      errors++;
      report();
    });
    pending.set(req, scheduled);
  }
  clearInterval(tick);
  // The last requests get a moment to be answered; any still open then count with the time
  // waited, not as failures of the server.
  for (const until = performance.now() + 2000; pending.size && performance.now() < until; ) await new Promise((r) => setTimeout(r, 20));
  report();
  pending.clear();
  agent.destroy();
}

interface Target {
  webUrl: string;
  productId: string;
  token: string;
}

/** The files of the label, relative to it, with their bytes (the filler made as it is uploaded). */
function labelFiles(): { site: string; files: string[] } {
  const site = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-bench-release-'));
  buildSite(site, exampleSpec('jar', 'org.bigrelease'));
  const files: string[] = [];
  const visit = (rel: string) => {
    for (const e of fs.readdirSync(path.join(site, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) visit(p);
      else files.push(p);
    }
  };
  visit('');
  return { site, files };
}

async function mkdirs(sftp: ssh2.SFTPWrapper, dirs: string[]): Promise<void> {
  for (const d of dirs) await call((cb) => sftp.mkdir(d, cb)).catch(() => {});
}

async function release(target: Target): Promise<{ status: number; text: string }> {
  const res = await fetch(`${target.webUrl}/api/products/${target.productId}/labels/${LABEL}/release`, {
    method: 'POST',
    headers: { authorization: `Bearer ${target.token}` },
  });
  return { status: res.status, text: await res.text() };
}

/**
 * Uploads the label where nothing crawls it (under workflows/), moves it into update-site/ and
 * releases it once: the attack starts from a released label of RELEASE_FILES files.
 */
export async function prepareRelease(sftp: ssh2.SFTPWrapper, target: Target, report: ReleaseReport): Promise<void> {
  const quietUntil = Date.now() + QUIET_PROBE_S * 1000;
  await probe(target.webUrl, () => Date.now() < quietUntil, (p) => {
    report.quietProbe = p;
  });
  const { site, files } = labelFiles();
  try {
    const dirs = new Set<string>([STAGED, `${STAGED}/extra`]);
    for (const f of files) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) dirs.add(`${STAGED}/${d}`);
    await mkdirs(sftp, [...dirs].sort());
    const uploads: [string, () => Buffer][] = [
      ...files.map((f): [string, () => Buffer] => [`${STAGED}/${f}`, () => fs.readFileSync(path.join(site, f))]),
      ...Array.from({ length: RELEASE_FILES }, (_, i): [string, () => Buffer] => [`${STAGED}/extra/f${String(i).padStart(6, '0')}.bin`, () => randomBytes(64)]),
    ];
    let next = 0;
    const worker = async () => {
      while (next < uploads.length) {
        const [remote, data] = uploads[next++]!;
        await putFile(sftp, remote, data());
      }
    };
    await Promise.all(Array.from({ length: WINDOW }, worker));
    report.files = uploads.length;
    await call((cb) => sftp.rename(STAGED, `/update-site/${LABEL}`, cb));
    const first = await release(target);
    if (first.status !== 200) throw new Error(`the first release answered ${first.status}: ${first.text.slice(0, 300)}`);
  } finally {
    fs.rmSync(site, { recursive: true, force: true });
  }
}

/** Changes one file of the label and releases it, again and again until `live` says stop. */
export async function releaseAttack(sftp: ssh2.SFTPWrapper, target: Target, report: ReleaseReport, live: () => boolean): Promise<void> {
  void probe(target.webUrl, live, (p) => {
    report.probe = p;
  });
  while (live()) {
    await putFile(sftp, `/update-site/${LABEL}/extra/changed.bin`, randomBytes(1024));
    const started = Date.now();
    const timer = setInterval(() => {
      report.waitingMs = Date.now() - started;
    }, 100);
    try {
      const r = await release(target);
      if (r.status === 200) report.releases++;
      else if (r.status === 422) report.refused++;
      else throw new Error(`release answered ${r.status}: ${r.text.slice(0, 200)}`);
    } finally {
      clearInterval(timer);
    }
    report.waitingMs = 0;
    report.longestMs = Math.max(report.longestMs, Date.now() - started);
  }
}

const ms = (v: number) => `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ms`;
const probeLine = (name: string, p: Probe | null) =>
  p ? `${name} p50 ${ms(p.p50)} p99 ${ms(p.p99)} max ${ms(p.max)} (${p.count} requests${p.errors ? `, ${p.errors} failed` : ''})` : `${name} not measured`;

/** The bench's lines for this attack. */
export function describeRelease(r: ReleaseReport): string {
  const ratio = r.quietProbe && r.probe ? `; p99 releasing / quiet ${(r.probe.p99 / r.quietProbe.p99).toFixed(2)}` : '';
  return [
    `  release: a label of ${r.files} files, one file changed each time: ${r.releases} releases${r.refused ? `, ${r.refused} refused` : ''}${r.releases ? ` (slowest ${(r.longestMs / 1000).toFixed(1)} s)` : ''}${r.waitingMs ? `, one unanswered after ${(r.waitingMs / 1000).toFixed(1)} s` : ''}${r.error ? `; stopped: ${r.error}` : ''}`,
    `    web process /healthz at ${PROBE_RATE}/s: ${probeLine('quiet', r.quietProbe)}; ${probeLine('releasing', r.probe)}${ratio}`,
  ].join('\n');
}
