/**
 * A whole publishing deployment in this process for `pier publish` tests: the web part (REST
 * API, release), the SFTP server and the download host (the release's crawl reads through it),
 * sharing one data dir and database, on free loopback ports. `pier publish` itself runs as a
 * child process, as a vendor runs it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Config, loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { type RunningDownloads, startDownloads } from '../../../src/publishing/downloads/index.js';
import type { IssuedCredentials } from '../../../src/publishing/products/service.js';
import { type RunningSftp, startSftp } from '../../../src/publishing/sftp/index.js';
import { tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';

export interface PublishStack {
  config: Config;
  dataDir: string;
  web: RunningPublishing;
  sftp: RunningSftp;
  downloads: RunningDownloads;
  register(id: string): Promise<IssuedCredentials>;
  /**
   * Every stored file of the label's uploaded folder: path → inode. An upload puts a new file in
   * place (a new inode); a release links the files (their ctime, and so the storage version, moves).
   */
  stored(productId: string, label: string): Promise<Map<string, string>>;
  close(): Promise<void>;
}

/**
 * The ports are chosen free, then taken: the web part's own port (0, the system's choice) can
 * be one of them meanwhile, and SFTP or the download host then finds it in use. Such a start
 * closes what it started (a web part left listening kept the test process from ever ending)
 * and tries again with other ports.
 */
export async function startPublishStack(databaseUrl: string, options: { sftpStorageDir?: string; env?: Record<string, string> } = {}): Promise<PublishStack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPublishStackOnce(databaseUrl, options);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EADDRINUSE' || attempt >= 3) throw e;
    }
  }
}

async function startPublishStackOnce(databaseUrl: string, options: { sftpStorageDir?: string; env?: Record<string, string> }): Promise<PublishStack> {
  const dataDir = tempDir('pier-publish-');
  const [sftpPort, downloadPort] = [await freePort(), await freePort()];
  const env = {
    PIER_DATA_DIR: dataDir,
    PIER_DATABASE_URL: databaseUrl,
    PIER_SFTP_PORT: String(sftpPort),
    PIER_SFTP_HOST: '127.0.0.1',
    PIER_DOWNLOAD_PORT: String(downloadPort),
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${downloadPort}`,
    PIER_LOG_LEVEL: 'silent',
    // Releases come from the explicit call of `pier publish` only, never from the settle timer.
    PIER_CRAWL_SETTLE_SECONDS: '0',
    ...options.env,
  };
  const config = loadConfig(env);
  const started: { close(): Promise<void> }[] = [];
  const start = async <T extends { close(): Promise<void> }>(part: Promise<T>): Promise<T> => {
    const p = await part;
    started.push(p);
    return p;
  };
  let web: RunningPublishing;
  let sftp: RunningSftp;
  let downloads: RunningDownloads;
  try {
    web = await start(startPublishing(databaseUrl, { failureLimits: { maxFailures: 1000 } }, env));
    // A SFTP part with a storage (and so host keys) of its own: an impostor for the host-key tests.
    const sftpConfig = options.sftpStorageDir ? loadConfig({ ...env, PIER_STORAGE_DIR: options.sftpStorageDir }) : config;
    sftp = await start(startSftp(sftpConfig, { failureLimits: { maxFailures: 1000 } }));
    downloads = await start(startDownloads(config));
  } catch (e) {
    for (const p of started.reverse()) await p.close().catch(() => {});
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const storage = localStorage(config.publishing.storageDir);
  return {
    config,
    dataDir,
    web,
    sftp,
    downloads,
    register: (id) => web.service.products.register(id, { name: id }),
    async stored(productId, label) {
      const out = new Map<string, string>();
      const root = path.join(config.publishing.storageDir, productId, 'update-site', label);
      for (const e of (await storage.walk(`${productId}/update-site/${label}`)) ?? []) {
        const st = e.type === 'file' ? fs.statSync(path.join(root, e.path), { throwIfNoEntry: false }) : undefined;
        if (st) out.set(e.path, String(st.ino));
      }
      return out;
    },
    async close() {
      await sftp.close();
      await downloads.close();
      await web.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Environment of a vendor's shell: no CI variables, a home of its own (known hosts). */
export function vendorEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), ...extra };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

/**
 * Runs `pier publish …` as a child process without blocking this process's event loop (the
 * servers under test run here). `onStdout` sees the output as it comes; `child` can be killed.
 */
export function runPier(args: string[], env: NodeJS.ProcessEnv, hooks: { onStart?(kill: () => void): void } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/pier.js', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    hooks.onStart?.(() => child.kill('SIGKILL'));
  });
}

export interface Proxy {
  url: string;
  close(): Promise<void>;
}

/**
 * An HTTP proxy in front of the web part, for what a test must do between two requests of
 * `pier publish` (hold the release, change the folder meanwhile) or to answer as an older
 * service would (`rewrite`). Everything else is passed through unchanged.
 */
export async function startProxy(
  target: string,
  hooks: { before?(method: string, url: string): Promise<void>; rewrite?(url: string, body: Buffer): Buffer } = {},
): Promise<Proxy> {
  const proxy = http.createServer(async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      await hooks.before?.(req.method ?? 'GET', req.url ?? '/');
      const upstream = await fetch(`${target}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      let body: Buffer = Buffer.from(await upstream.arrayBuffer());
      if (hooks.rewrite) body = hooks.rewrite(req.url ?? '/', body);
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(body);
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        proxy.closeAllConnections();
        proxy.close(() => r());
      }),
  };
}
