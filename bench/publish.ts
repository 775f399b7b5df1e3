// `pier publish` against OpenSSH's `sftp put -r` of the same files to the same Pier SFTP server
// (docs/operators.md#performance): a built update site of 500 files / 50 MB (a generated P2 site
// plus artifacts), each to a fresh label, alternating, the median of BENCH_PUBLISH_ROUNDS (target:
// pier publish <= 1.2x the time of sftp put -r). pier publish does more than upload: it checks the
// site, hashes it, compares with the server and releases the label (a crawl); the upload phase
// alone is printed beside. Then a re-publish with one changed file (target <= 2 s: only that file
// moves). The client (pier publish, sftp) runs on CPU 0 and pier serve on CPU 1 when taskset
// exists.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { buildSite, exampleSpec } from '../test/helpers/p2-fixtures.js';
import { freePort, pierCli, pinToCpu, tempDir, waitForPier } from './lib.js';

const FILES = 500;
const MB = 50;
const ROUNDS = Number(process.env.BENCH_PUBLISH_ROUNDS ?? 3);
const SSH_OPTS = ['-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR'];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv, input?: string): { seconds: number; stdout: string } {
  const pin = has('taskset') ? ['taskset', '-c', '0'] : [];
  const started = process.hrtime.bigint();
  const r = spawnSync(pin[0] ?? cmd, [...pin.slice(1), ...(pin.length ? [cmd] : []), ...args], { env: { ...process.env, ...env }, input, encoding: 'utf8' });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 2).join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return { seconds, stdout: r.stdout };
}

/** A valid P2 site (checked by pier publish) filled up to `FILES` files and `MB` megabytes. */
function buildBenchSite(dir: string): void {
  buildSite(dir, exampleSpec('jar'));
  const have = fs.readdirSync(dir, { recursive: true }).filter((p) => fs.statSync(path.join(dir, String(p))).isFile()).length;
  const extra = FILES - have - 1; // and index.html
  const per = Math.floor((MB * 1024 * 1024) / extra);
  for (let i = 0; i < extra; i++) {
    const sub = path.join(dir, 'binary', `part${i % 10}`);
    fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `org.example.native_${i}.bin`), randomBytes(per));
  }
  fs.writeFileSync(path.join(dir, 'index.html'), '<h1>Bench</h1>');
}

export async function benchPublish(): Promise<string> {
  for (const tool of ['sshpass', 'sftp']) if (!has(tool)) return `skipped: ${tool} is not installed`;
  const work = tempDir('pier-bench-publish-');
  const [http, sftpPort, downloads] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PIER_DATA_DIR: path.join(work, 'data'),
    PIER_HTTP_PORT: String(http),
    PIER_SFTP_PORT: String(sftpPort),
    PIER_SFTP_HOST: '127.0.0.1',
    PIER_DOWNLOAD_PORT: String(downloads),
    PIER_BASE_URL: `http://127.0.0.1:${http}`,
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${downloads}`,
    PIER_LOG_LEVEL: 'warn',
    // Releases by pier publish's call only; the settle timer would also crawl sftp's uploads.
    PIER_CRAWL_SETTLE_SECONDS: '0',
  };
  const creds = JSON.parse(pierCli(env, 'staff', 'register', 'bench-pub', '--name', 'Bench', '--json')) as { editToken: string; sftp: { password: string } };
  let server: ChildProcess | null = null;
  try {
    server = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads,sftp'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
    await waitForPier(`http://127.0.0.1:${http}/healthz`, sftpPort);
    pinToCpu(server.pid as number, 1);
    const site = path.join(work, 'site');
    buildBenchSite(site);
    const publishEnv = { HOME: work, XDG_CONFIG_HOME: path.join(work, '.config'), PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password };
    const publish = (label: string) =>
      timed(process.execPath, ['bin/pier.js', 'publish', '--server', env.PIER_BASE_URL, '--product', 'bench-pub', '--label', label, '--site', site], publishEnv);
    const putR = (label: string) =>
      timed('sshpass', ['-e', 'sftp', '-oBatchMode=no', ...SSH_OPTS, '-P', String(sftpPort), '-b', '-', 'bench-pub@127.0.0.1'], { SSHPASS: creds.sftp.password }, `put -r ${site} /update-site/${label}\n`);
    const uploadSeconds = (stdout: string) => Number(/uploaded: .* in ([\d.]+) s/.exec(stdout)?.[1] ?? Number.NaN);

    // One unmeasured round each (V8 compiles the server's per-file code during the first few hundred files).
    publish('warm-pub');
    putR('warm-ref');
    const ours: number[] = [];
    const upload: number[] = [];
    const ref: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const p = publish(`pub-${round}`);
      ours.push(p.seconds);
      upload.push(uploadSeconds(p.stdout));
      ref.push(putR(`ref-${round}`).seconds);
    }
    const again: number[] = [];
    const againUpload: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      fs.writeFileSync(path.join(site, 'index.html'), `<h1>Bench ${round}</h1>`);
      const p = publish('pub-0');
      if (!/uploaded: 1 file /.test(p.stdout)) throw new Error(`re-publish moved more than the changed file:\n${p.stdout}`);
      again.push(p.seconds);
      againUpload.push(uploadSeconds(p.stdout));
    }
    const [o, u, r] = [median(ours), median(upload), median(ref)];
    return [
      `site: ${FILES} files / ${MB} MB, median of ${ROUNDS} after one unmeasured round`,
      `publish (fresh label)        pier publish ${o.toFixed(2)} s (upload phase ${u.toFixed(2)} s)  sftp put -r ${r.toFixed(2)} s  ratio ${(o / r).toFixed(2)} (upload phase ${(u / r).toFixed(2)}; target <= 1.2)`,
      `re-publish, 1 file changed   pier publish ${median(again).toFixed(2)} s (upload phase ${median(againUpload).toFixed(2)} s)  (target <= 2 s)`,
    ].join('\n');
  } finally {
    server?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    fs.rmSync(work, { recursive: true, force: true });
  }
}
