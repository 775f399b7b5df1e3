// `npm run bench runner-hostile-settings`: does an uploader's crafted workflow archive slow the
// runner down for everyone? One `pier serve --only runner` process (SQLite) answers another
// user's GET /api/me at a fixed rate twice: quiet, then while an editor uploads, over and over
// (BENCH_SETTINGS_UPLOADERS at once), new versions of an archive whose 64 node folders each hold
// a settings.xml of 256 KiB filled with `key="factory"value="` (the filler a backtracking
// pre-parse check is quadratic on; a few KB zipped). Reading an upload's declared parameters
// must stay linear and off the serving thread (docs/runner.md, Workflows). Target: the other
// user's p99 under attack within 2x of the quiet run's, no errors.
//
// The machine running this is shared: the ratio is indicative, the numbers more so.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { makeZipOf } from '../test/runner/helpers.js';
import { freePort, load, type LoadResult, row, SETUP_TOKEN, startPier, tempDir } from './lib.js';

const SECONDS = Number(process.env.BENCH_SETTINGS_SECONDS ?? 10);
const RATE = Number(process.env.BENCH_SETTINGS_RATE ?? 100);
const UPLOADERS = Number(process.env.BENCH_SETTINGS_UPLOADERS ?? 2);
const ENTRIES = 64;
const ENTRY_BYTES = 256 * 1024 - 64;
const TARGET = 2;
const PASSWORD = 'bench password long enough';

function craftedArchive(): Buffer {
  const unit = 'key="factory"value="';
  const text = unit.repeat(Math.floor(ENTRY_BYTES / unit.length));
  return makeZipOf([['W/workflow.knime', '<config key="workflow.knime"/>'], ...Array.from({ length: ENTRIES }, (_, i): [string, string] => [`W/Node (#${i})/settings.xml`, text])]);
}

async function json(base: string, method: string, url: string, token: string | null, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(base + url, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

async function upload(base: string, url: string, token: string, archive: Buffer): Promise<number> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(archive)]), 'crafted.knwf');
  const res = await fetch(base + url, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  await res.arrayBuffer();
  return res.status;
}

export async function benchRunnerHostileSettings(): Promise<string> {
  const dataDir = tempDir('pier-bench-settings-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  try {
    child = await startPier(
      {
        PIER_HOST: '127.0.0.1',
        PIER_DATA_DIR: dataDir,
        PIER_LOG_LEVEL: 'silent',
        RUNNER_PORT: String(port),
        RUNNER_URL: base,
        RUNNER_SETUP_TOKEN: SETUP_TOKEN,
        RUNNER_STORAGE_DIR: path.join(dataDir, 'storage'),
        RUNNER_DATABASE_URL: path.join(dataDir, 'runner.sqlite'),
      },
      'runner',
      `${base}/healthz`,
    );
    const admin = (await json(base, 'POST', '/api/setup', null, { setupToken: SETUP_TOKEN, email: 'admin@example.com', password: PASSWORD })).body.session as { token: string };
    await json(base, 'POST', '/api/users', admin.token, { email: 'other@example.com', password: PASSWORD });
    const other = (await json(base, 'POST', '/api/auth/login', null, { email: 'other@example.com', password: PASSWORD })).body.token as string;
    const project = (await json(base, 'POST', '/api/projects', admin.token, { name: 'crafted' })).body.id as string;
    const archive = craftedArchive();
    const first = await fetch(`${base}/api/projects/${project}/workflows`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin.token}` },
      body: (() => {
        const f = new FormData();
        f.append('file', new Blob([new Uint8Array(archive)]), 'crafted.knwf');
        return f;
      })(),
    });
    const workflowId = ((await first.json()) as { id: string }).id;
    const victim = { url: `${base}/api/me`, headers: { authorization: `Bearer ${other}` }, rate: RATE, seconds: SECONDS };
    await load({ ...victim, seconds: 1 });
    const quiet = await load(victim);

    let stop = false;
    let uploads = 0;
    let refused = 0;
    const attackers = Array.from({ length: UPLOADERS }, async () => {
      while (!stop) {
        const status = await upload(base, `/api/workflows/${workflowId}/versions`, admin.token, archive);
        if (status === 201) uploads++;
        else refused++;
      }
    });
    let attacked: LoadResult;
    try {
      attacked = await load(victim);
    } finally {
      stop = true;
      await Promise.all(attackers);
    }
    const ratio = attacked.p99 / Math.max(quiet.p99, 1);
    const pass = ratio <= TARGET && attacked.errors === 0;
    return [
      `crafted archive: ${ENTRIES} settings.xml of ${ENTRY_BYTES} bytes (${(archive.length / 1024).toFixed(1)} KiB zipped); ${UPLOADERS} uploader(s); GET /api/me at ${RATE} req/s for ${SECONDS} s`,
      row('other user, quiet', quiet),
      row('other user, while crafted archives upload', attacked, quiet),
      `uploads done during the attack: ${uploads} (refused: ${refused})`,
      `p99 under attack / quiet: ${ratio.toFixed(2)}x (target <= ${TARGET}x, no errors): ${pass ? 'PASS' : 'FAIL'}`,
    ].join('\n');
  } finally {
    child?.kill('SIGTERM');
  }
}
