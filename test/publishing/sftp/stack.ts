import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';
import { type Config, loadConfig } from '../../../src/infra/config.js';
import type { FailureLimiterOptions } from '../../../src/infra/failure-limiter.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { type RunningDownloads, startDownloads } from '../../../src/publishing/downloads/index.js';
import { productFilesReader, type ProductFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../../src/publishing/files/service.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { type IssuedCredentials, productService, type ProductService } from '../../../src/publishing/products/service.js';
import { type RunningSftp, type SftpTuning, startSftp } from '../../../src/publishing/sftp/index.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { crawlerService, type LabelCrawl } from '../../../src/publishing/crawler/service.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';

export interface Stack {
  config: Config;
  dataDir: string;
  storageDir: string;
  sftp: RunningSftp;
  downloads: RunningDownloads;
  products: ProductService;
  files: ProductFilesReader;
  /** The same files service the server uses (limits, summaries). */
  fileStore: FilesService;
  register(id: string): Promise<IssuedCredentials>;
  /**
   * Releases the label's uploaded folder as the vendor's `POST …/labels/<label>/release` does (a
   * copy crawled from this download host, made current when it installs): the download host
   * serves a label only once it has a release. Fails the test when no release is made.
   */
  release(productId: string, label: string): Promise<LabelCrawl>;
  close(): Promise<void>;
}

/** The real SFTP server and download host in this process, on free ports, sharing one data dir. */
export async function startStack(
  databaseUrl: string,
  options: { env?: Record<string, string>; failureLimits?: Partial<FailureLimiterOptions>; sftp?: SftpTuning } = {},
): Promise<Stack> {
  const dataDir = tempDir('pier-sftp-');
  // A released label's composite documents name its releases by PIER_DOWNLOAD_URL: the download
  // host listens where that says.
  const downloadPort = options.env?.PIER_DOWNLOAD_PORT ?? String(await freePort());
  const config = loadConfig({
    PIER_DATA_DIR: dataDir,
    PIER_DATABASE_URL: databaseUrl,
    PIER_SFTP_PORT: '0',
    PIER_DOWNLOAD_PORT: downloadPort,
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${downloadPort}`,
    PIER_LOG_LEVEL: 'silent',
    ...options.env,
  });
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const products = productService({ repo: productsRepository(database.db, database.dialect), publishing: config.publishing });
  const sftp = await startSftp(config, {
    ...(options.failureLimits ? { failureLimits: options.failureLimits } : {}),
    ...(options.sftp ? { tuning: options.sftp } : {}),
  });
  const downloads = await startDownloads(config);
  return {
    config,
    dataDir,
    storageDir: config.publishing.storageDir,
    sftp,
    downloads,
    products,
    files: productFilesReader(filesRepository(database.db)),
    fileStore: filesService({
      storage: localStorage(config.publishing.storageDir),
      repo: filesRepository(database.db),
      limits: config.publishing.limits,
    }),
    register: (id) => products.register(id, { name: id }),
    async release(productId, label) {
      const crawler = crawlerService({
        crawls: crawlsRepository(database.db, database.dialect),
        products: productsRepository(database.db, database.dialect),
        files: productFilesReader(filesRepository(database.db)),
        releases: releasesService({ storage: localStorage(config.publishing.storageDir), repo: releasesRepository(database.db), keep: config.publishing.releasesKept }),
        downloadUrl: downloads.url,
      });
      try {
        const done = await crawler.release(productId, label, { kind: 'vendor' });
        if (done.crawl.release.serving === null) throw new Error(`${productId}/${label} was not released: ${done.crawl.release.message} ${JSON.stringify(done.crawl.problems)}`);
        return done.crawl;
      } finally {
        await crawler.close();
      }
    },
    async close() {
      await sftp.close();
      await downloads.close();
      await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking the event loop (the servers under test share this process). */
export function run(cmd: string, args: string[], options: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, ...options.env },
      cwd: options.cwd,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c) => {
      stdout += c;
    });
    child.stderr?.on('data', (c) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (child.stdin) {
      // A child that exits before reading its input (a failed login, the p2 director)
      // must not crash the test: its exit code and output are what the test checks.
      child.stdin.on('error', () => {});
      child.stdin.end(options.input);
    }
  });
}

const SSH_OPTS = ['-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR'];

/**
 * OpenSSH `sftp` in batch mode with a password: `-b` implies BatchMode=yes, which disables
 * password prompts, so `-oBatchMode=no` comes first; sshpass feeds the password (NOTES.md).
 */
export function openSshSftp(port: number, creds: { username: string; password: string }, commands: string[]): Promise<Run> {
  return run(
    'sshpass',
    ['-e', 'sftp', '-oBatchMode=no', ...SSH_OPTS, '-oPreferredAuthentications=password', '-P', String(port), '-b', '-', `${creds.username}@127.0.0.1`],
    { env: { SSHPASS: creds.password }, input: `${commands.join('\n')}\n` },
  );
}

export function lftp(port: number, creds: { username: string; password: string }, script: string, cwd: string): Promise<Run> {
  const connect = `ssh -a -x ${SSH_OPTS.join(' ')}`;
  return run(
    'lftp',
    ['-c', `set sftp:connect-program "${connect}"; set net:max-retries 1; set cmd:fail-exit yes; open -u ${creds.username},${creds.password} -p ${port} sftp://127.0.0.1; ${script}`],
    { cwd },
  );
}

/** An ssh2 client session (an independent client library) for requests OpenSSH cannot be made to send. */
export function ssh2Sftp(port: number, username: string, password: string): Promise<{ sftp: ssh2.SFTPWrapper; end(): void }> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    client.on('ready', () =>
      client.sftp((err, sftp) => (err ? reject(err) : resolve({ sftp, end: () => client.end() }))),
    );
    client.on('error', reject);
    // A banned address is disconnected before the handshake: no 'error', only 'close'.
    client.on('close', () => reject(new Error('connection closed by the server')));
    client.connect({ host: '127.0.0.1', port, username, password, tryKeyboard: false, readyTimeout: 20_000 });
  });
}

/** A P2-shaped tree of `count` files with varied sizes (empty to ~1 MB) in nested folders. */
export function generateSite(dir: string, count: number): string[] {
  const written: string[] = [];
  const put = (rel: string, data: Buffer) => {
    const p = path.join(dir, rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, data);
    written.push(rel);
  };
  put('p2.index', Buffer.from('version=1\nmetadata.repository.factory.order=content.xml.xz,content.xml,!\n'));
  put('content.xml.xz', randomBytes(20_000));
  put('artifacts.jar', randomBytes(5_000));
  put('features/empty_1.0.0.jar', Buffer.alloc(0));
  put('plugins/large_1.0.0.jar', randomBytes(1_100_000));
  for (let i = written.length; i < count; i++) {
    const folder = i % 3 === 0 ? 'features' : i % 7 === 0 ? 'binary' : 'plugins';
    put(`${folder}/org.example.bundle${i}_1.0.${i}.v2026.jar`, randomBytes((i * 7919) % 40_000));
  }
  return written.sort();
}

export function sha(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

/** Every path under `dir` (all names, hidden ones included) with a hash of its contents. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const rel of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const p = path.join(dir, rel);
    const st = fs.lstatSync(p);
    out[rel] = st.isFile() ? sha(fs.readFileSync(p)) : st.isDirectory() ? 'dir' : 'other';
  }
  return out;
}

export async function fetchBytes(url: string): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}
