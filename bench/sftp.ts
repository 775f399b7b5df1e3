// SFTP throughput: the OpenSSH client against Pier's SFTP server and against OpenSSH's own
// server (Debian openssh-server: `sshd -D` on a loopback port with `internal-sftp`, a throwaway
// config and host key), in the same run: (a) one 200 MB file, (b) an update site of 500 files /
// 50 MB, each uploaded and downloaded. Prints wall-clock medians and ours/OpenSSH time ratios
// (target <= 1.5, the site upload too; docs/operators.md#performance), and each server's CPU time per run (its process and threads; OpenSSH's
// per-connection processes): unlike wall-clock time it leaves out waiting for a core that
// another process on a shared machine holds. Sizes: BENCH_SFTP_MB (default 200).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, pierCli, pinToCpu, tempDir } from './lib.js';

const BIG_MB = Number(process.env.BENCH_SFTP_MB ?? 200);
const SITE_FILES = 500;
const SITE_MB = 50;
const ROUNDS = Number(process.env.BENCH_SFTP_ROUNDS ?? 3);
const WARMUP_ROUNDS = Number(process.env.BENCH_SFTP_WARMUP ?? 1);
const SSH_OPTS = ['-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR'];

interface Target {
  name: string;
  /** CPU seconds the server has used so far (see `cpuSeconds`). */
  cpu: () => number;
  port: number;
  user: string;
  /** Remote folders for the big file and the site. */
  bigPath: string;
  siteDir: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

function sftpBatch(t: Target, commands: string[]): number {
  const started = process.hrtime.bigint();
  // taskset keeps the client (ssh does the crypto) on CPU 0, the servers run on CPU 1.
  const r = spawnSync('taskset', ['-c', '0', ...t.args, '-P', String(t.port), '-b', '-', `${t.user}@127.0.0.1`], {
    input: `${commands.join('\n')}\n`,
    env: { ...process.env, ...t.env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${t.name}: sftp failed: ${r.stderr}`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

const TICKS_PER_SECOND = 100; // USER_HZ, the unit of /proc/<pid>/stat times on Linux

/**
 * CPU seconds of a process from /proc/<pid>/stat: its own (all threads) and, with `children`,
 * that of its children it has reaped (sshd's per-connection processes).
 */
function cpuSeconds(pid: number, children: boolean): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const at = children ? 13 : 11; // utime, stime (fields 14, 15); cutime, cstime (16, 17)
  return (Number(f[at]) + Number(f[at + 1])) / TICKS_PER_SECOND;
}

/** Waits until sshd has reaped the connection's processes (their times count once reaped). */
function settleChildren(pid: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 100; i++) {
    if (fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim() === '') return;
    Atomics.wait(pause, 0, 0, 10);
  }
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not come up`);
}

async function startOpenSsh(dir: string): Promise<{ child: ChildProcess; target: Target }> {
  const port = await freePort();
  const key = path.join(dir, 'ssh_host_ed25519_key');
  const client = path.join(dir, 'client_key');
  spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
  spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', client]);
  fs.copyFileSync(`${client}.pub`, path.join(dir, 'authorized_keys'));
  fs.mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const config = path.join(dir, 'sshd_config');
  // A throwaway server: its own host key and an authorized key for the current user only, no
  // PAM, no shell (ForceCommand internal-sftp): the same job our server does.
  fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${key}`,
      'PidFile none',
      'UsePAM no',
      'StrictModes no',
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
      'Subsystem sftp internal-sftp',
      'ForceCommand internal-sftp',
      '',
    ].join('\n'),
  );
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (c) => {
    err += c;
  });
  await waitFor(() => /Server listening/.test(err) || spawnSync('sh', ['-c', `exec 3<>/dev/tcp/127.0.0.1/${port}`]).status === 0, `sshd (${err})`);
  pinToCpu(child.pid as number, 1);
  const user = (spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout || 'root').trim();
  const remote = path.join(dir, 'remote');
  fs.mkdirSync(remote);
  return {
    child,
    target: {
      name: 'OpenSSH internal-sftp',
      cpu: () => {
        settleChildren(child.pid as number);
        return cpuSeconds(child.pid as number, true);
      },
      port,
      user,
      bigPath: path.join(remote, 'big.zip'),
      siteDir: path.join(remote, 'site'),
      args: ['sftp', ...SSH_OPTS, '-oBatchMode=yes', '-i', client],
      env: {},
    },
  };
}

async function startOurs(dir: string): Promise<{ child: ChildProcess; target: Target }> {
  const env = { PIER_DATA_DIR: dir, PIER_SFTP_PORT: String(await freePort()), PIER_LOG_LEVEL: 'warn' };
  const creds = JSON.parse(pierCli(env, 'staff', 'register', 'bench-ext', '--name', 'Bench', '--json')).sftp;
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'sftp'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (c) => {
    err += c;
  });
  await waitFor(() => /sftp listening/.test(err), `pier sftp (${err})`);
  pinToCpu(child.pid as number, 1);
  return {
    child,
    target: {
      name: 'Pier (ssh2)',
      cpu: () => cpuSeconds(child.pid as number, false),
      port: Number(env.PIER_SFTP_PORT),
      user: creds.username,
      bigPath: '/update-site/5.4.zip',
      siteDir: '/update-site/5.4',
      args: ['sshpass', '-e', 'sftp', '-oBatchMode=no', ...SSH_OPTS],
      env: { SSHPASS: creds.password },
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export async function benchSftp(): Promise<string> {
  for (const tool of ['sshpass', 'sftp', 'taskset', '/usr/sbin/sshd']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `skipped: ${tool} is not installed`;
  }
  // Both servers store under one folder, so they meet the same file system (BENCH_SFTP_DIR, else
  // the temporary folder). Its type is printed: on an ext4 without a journal, creating a file
  // steps over every inode deleted in the last minutes, which an upload that replaces files
  // atomically (a new inode per file, Pier) pays and one that rewrites them in place (OpenSSH)
  // does not; on tmpfs or a journaled ext4 it costs nothing.
  const work = process.env.BENCH_SFTP_DIR ? fs.mkdtempSync(path.join(process.env.BENCH_SFTP_DIR, 'pier-bench-sftp-')) : tempDir('pier-bench-sftp-');
  const fsType = spawnSync('stat', ['-f', '-c', '%T', work], { encoding: 'utf8' }).stdout.trim() || 'unknown';
  const big = path.join(work, 'big.zip');
  const fd = fs.openSync(big, 'w');
  for (let i = 0; i < BIG_MB; i++) fs.writeSync(fd, randomBytes(1024 * 1024));
  fs.closeSync(fd);
  const site = path.join(work, 'site');
  const per = Math.floor((SITE_MB * 1024 * 1024) / SITE_FILES);
  for (let i = 0; i < SITE_FILES; i++) {
    const dir = path.join(site, i % 5 === 0 ? 'features' : 'plugins');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `org.example.b${i}_1.0.${i}.jar`), randomBytes(per));
  }
  const back = path.join(work, 'back');
  const servers = [await startOurs(path.join(work, 'pier')), await startOpenSsh(fs.mkdtempSync(path.join(work, 'openssh-')))];
  const ops: [string, (t: Target) => string[]][] = [
    [`upload 1 file ${BIG_MB} MB`, (t) => [`put ${big} ${t.bigPath}`]],
    [`download 1 file ${BIG_MB} MB`, (t) => [`get ${t.bigPath} ${back}-big`]],
    [`upload site ${SITE_FILES} files / ${SITE_MB} MB`, (t) => [`put -r ${site} ${t.siteDir}`]],
    [`download site ${SITE_FILES} files / ${SITE_MB} MB`, (t) => [`get -r ${t.siteDir} ${back}-site`]],
  ];
  const lines: string[] = [`files on ${fsType} (${work}); ${WARMUP_ROUNDS} unmeasured round(s), then the median of ${ROUNDS}`];
  try {
    for (const [name, commands] of ops) {
      const times: number[][] = servers.map(() => []);
      const cpus: number[][] = servers.map(() => []);
      // One unmeasured round each first: a server runs for days, so the steady state is what
      // counts, and Pier's per-file code is compiled by V8's JIT during its first few hundred
      // files (the first round of a site upload took 1.3-1.5x the later ones; OpenSSH, compiled
      // ahead of time, has no such round). Then alternate ours and the reference so drift on
      // this shared machine hits both alike.
      for (let round = -WARMUP_ROUNDS; round < ROUNDS; round++) {
        servers.forEach((s, i) => {
          fs.rmSync(`${back}-site`, { recursive: true, force: true });
          const cpu = s.target.cpu();
          const time = sftpBatch(s.target, commands(s.target));
          if (round < 0) return;
          times[i]?.push(time);
          cpus[i]?.push(s.target.cpu() - cpu);
        });
      }
      const [ours, ref] = times.map(median) as [number, number];
      const [oursCpu, refCpu] = cpus.map(median) as [number, number];
      const mbs = (name.includes('site') ? SITE_MB : BIG_MB) / ours;
      lines.push(
        `${name.padEnd(34)} Pier ${ours.toFixed(2).padStart(6)} s (${mbs.toFixed(0)} MB/s)  OpenSSH ${ref.toFixed(2).padStart(6)} s  ratio ${(ours / ref).toFixed(2)} (target <= 1.5)`,
        `${''.padEnd(34)} server CPU: Pier ${oursCpu.toFixed(2)} s  OpenSSH ${refCpu.toFixed(2)} s`,
      );
    }
  } finally {
    for (const s of servers) s.child.kill('SIGTERM');
    fs.rmSync(work, { recursive: true, force: true });
  }
  return lines.join('\n');
}
