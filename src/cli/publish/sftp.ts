/**
 * The SFTP side of `pier publish`, with ssh2's client: the host key is checked before the
 * password is sent, then the plan runs with many requests in flight (several files at once and
 * several writes per file), since an SFTP client that waits for each answer spends its time on
 * round trips, not bytes.
 */
import fsp from 'node:fs/promises';
import ssh2 from 'ssh2';
import { fingerprintOf } from '../../publishing/sftp/host-keys.js';
import { EXIT, PublishFailure } from './failure.js';
import type { LocalFile } from './local-site.js';
import type { Progress } from './progress.js';

/** How the server's host key is accepted. */
export type HostKeyRule =
  /** --host-key: only these fingerprints. */
  | { kind: 'pinned'; fingerprints: string[] }
  /** The key first seen at this host and port, remembered (known-hosts.ts). */
  | { kind: 'remembered'; fingerprints: string[]; file: string }
  /** The fingerprints GET /api/publishing lists (fetched over the base URL). */
  | { kind: 'listed'; fingerprints: string[] }
  /** Nothing to check against: accepted and printed (trust on first use). */
  | { kind: 'first-use' };

export interface Connection {
  sftp: ssh2.SFTPWrapper;
  /** The fingerprint of the key the server presented. */
  fingerprint: string;
  end(): void;
}

/** Writes in flight at once over the connection (OpenSSH's sftp keeps 64 per file). */
const WINDOW = 64;
/** Files open at once (the server allows 64 handles per session). */
const FILES_AT_ONCE = 16;
/** Largest WRITE a server that does not announce its limits takes (ssh2's own default). */
const DEFAULT_CHUNK = 32 * 1024 - 2 * 1024;

export function connectSftp(target: {
  host: string;
  port: number;
  username: string;
  password: string;
  hostKey: HostKeyRule;
  timeoutSeconds: number;
}): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let presented = '';
    let refusedKey: string | null = null;
    let settled = false;
    const fail = (e: PublishFailure) => {
      if (settled) return;
      settled = true;
      client.end();
      reject(e);
    };
    client.on('ready', () => {
      client.sftp((err, sftp) => {
        if (err) return fail(new PublishFailure(EXIT.upload, `SFTP: ${err.message}`));
        settled = true;
        // A connection lost later fails the request in flight (its callback gets the error).
        client.on('error', () => {});
        resolve({ sftp, fingerprint: presented, end: () => client.end() });
      });
    });
    client.on('error', (err: Error & { level?: string }) => {
      if (refusedKey) return fail(new PublishFailure(EXIT.upload, refusedKey));
      if (err.level === 'client-authentication') {
        return fail(new PublishFailure(EXIT.authentication, `SFTP: the server refused the password of ${target.username} (PIER_SFTP_PASSWORD or the trusted-publishing credential)`));
      }
      fail(new PublishFailure(EXIT.upload, `SFTP ${target.host}:${target.port}: ${err.message}`));
    });
    client.on('close', () => fail(new PublishFailure(EXIT.upload, refusedKey ?? `SFTP ${target.host}:${target.port}: the connection closed`)));
    client.connect({
      host: target.host,
      port: target.port,
      username: target.username,
      password: target.password,
      tryKeyboard: false,
      readyTimeout: target.timeoutSeconds * 1000,
      keepaliveInterval: 15_000,
      // Checked before authentication: a server with another key never sees the password.
      hostVerifier: (key: Buffer) => {
        presented = fingerprintOf(key);
        const rule = target.hostKey;
        if (rule.kind === 'first-use' || rule.fingerprints.includes(presented)) return true;
        const at = `SFTP ${target.host}:${target.port} presented host key ${presented}`;
        refusedKey =
          rule.kind === 'pinned'
            ? `${at}, not the one pinned with --host-key (${rule.fingerprints.join(', ')}): refused`
            : rule.kind === 'remembered'
              ? `${at}, not the one it presented first (${rule.fingerprints.join(', ')}, remembered in ${rule.file}): refused; if the operator really changed it, pin the new one with --host-key`
              : `${at}, which is not one of the keys GET /api/publishing lists (${rule.fingerprints.join(', ')}): refused`;
        return false;
      },
    });
  });
}

const STATUS_NO_SUCH_FILE = 2;

function sftpError(op: string, path: string, err: Error & { code?: number }): PublishFailure {
  return new PublishFailure(EXIT.upload, `SFTP ${op} ${path}: ${err.message}`);
}

/** At most `n` holders at once; the rest wait in order. */
class Window {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  acquire(): Promise<void> | void {
    if (this.free > 0) {
      this.free--;
      return;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** Runs `fn` over `items`, `n` at a time; the first failure stops new work and is rethrown once all running ones ended. */
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown = null;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length && failure === null) {
        try {
          await fn(items[next++]!);
        } catch (e) {
          failure ??= e;
        }
      }
    }),
  );
  if (failure !== null) throw failure;
}

export function remoteOps(sftp: ssh2.SFTPWrapper) {
  const chunk = Math.max(1024, Math.min((sftp as unknown as { _maxWriteLen?: number })._maxWriteLen ?? DEFAULT_CHUNK, 256 * 1024));
  const window = new Window(WINDOW);

  const open = (path: string) =>
    new Promise<Buffer>((resolve, reject) => sftp.open(path, 'w', (err, handle) => (err ? reject(sftpError('open', path, err)) : resolve(handle))));
  const close = (path: string, handle: Buffer) =>
    new Promise<void>((resolve, reject) => sftp.close(handle, (err) => (err ? reject(sftpError('close', path, err)) : resolve())));
  const write = (path: string, handle: Buffer, data: Buffer, position: number) =>
    new Promise<void>((resolve, reject) =>
      sftp.write(handle, data, 0, data.length, position, (err) => (err ? reject(sftpError('write', path, err)) : resolve())),
    );
  const isDir = (path: string) =>
    new Promise<boolean>((resolve) => sftp.stat(path, (err, st) => resolve(!err && st.isDirectory())));

  /** One file: open, every chunk written with others in flight, close (the server puts it in place at close). */
  async function put(remote: string, file: LocalFile, progress: Progress | null): Promise<void> {
    const fd = await fsp.open(file.abs, 'r');
    try {
      const handle = await open(remote);
      const writes: Promise<void>[] = [];
      let failed: unknown = null;
      /** The local file could not be read whole: its handle is left open, and the session's end discards it. */
      let unreadable = false;
      try {
        for (let position = 0; position < file.size && failed === null; position += chunk) {
          await window.acquire();
          const length = Math.min(chunk, file.size - position);
          const data = Buffer.allocUnsafe(length);
          let bytesRead = 0;
          try {
            ({ bytesRead } = await fd.read(data, 0, length, position));
          } finally {
            if (bytesRead !== length) {
              window.release();
              unreadable = true;
            }
          }
          if (unreadable) throw new PublishFailure(EXIT.upload, `${file.abs} changed while it was uploaded`);
          writes.push(
            write(remote, handle, data, position).then(
              () => {
                window.release();
                progress?.bytes(length);
              },
              (e) => {
                window.release();
                failed ??= e;
              },
            ),
          );
        }
      } finally {
        await Promise.all(writes);
        // A CLOSE puts the file in place, so only a file read in full is closed. A refused write
        // has already made the server discard the upload; its handle is closed to free it.
        if (!unreadable) {
          await close(remote, handle).catch((e) => {
            failed ??= e;
          });
        }
      }
      if (failed !== null) throw failed;
    } finally {
      await fd.close();
    }
    progress?.file();
  }

  return {
    async putAll(items: { remote: string; file: LocalFile }[], progress: Progress | null): Promise<void> {
      await pool(items, FILES_AT_ONCE, (i) => put(i.remote, i.file, progress));
    },

    /** Creates folders given parents first; one that exists already is fine. */
    async mkdirs(paths: string[]): Promise<void> {
      const byDepth = new Map<number, string[]>();
      for (const p of paths) {
        const d = p.split('/').length;
        byDepth.set(d, [...(byDepth.get(d) ?? []), p]);
      }
      for (const d of [...byDepth.keys()].sort((a, b) => a - b)) {
        await pool(byDepth.get(d)!, WINDOW, (p) =>
          new Promise<void>((resolve, reject) =>
            sftp.mkdir(p, (err) => {
              if (!err) return resolve();
              void isDir(p).then((dir) => (dir ? resolve() : reject(sftpError('mkdir', p, err))));
            }),
          ),
        );
      }
    },

    /** Removes files; one already gone is fine (a re-run after an interruption). */
    async removeFiles(paths: string[], progress?: () => void): Promise<void> {
      await pool(paths, WINDOW, (p) =>
        new Promise<void>((resolve, reject) =>
          sftp.unlink(p, (err: (Error & { code?: number }) | null | undefined) => {
            if (err && err.code !== STATUS_NO_SUCH_FILE) return reject(sftpError('remove', p, err));
            progress?.();
            resolve();
          }),
        ),
      );
    },

    /** Removes empty folders given deepest first, one depth at a time. */
    async removeFolders(paths: string[]): Promise<void> {
      const byDepth = new Map<number, string[]>();
      for (const p of paths) {
        const d = p.split('/').length;
        byDepth.set(d, [...(byDepth.get(d) ?? []), p]);
      }
      for (const d of [...byDepth.keys()].sort((a, b) => b - a)) {
        await pool(byDepth.get(d)!, WINDOW, (p) =>
          new Promise<void>((resolve, reject) =>
            sftp.rmdir(p, (err: (Error & { code?: number }) | null | undefined) => {
              if (err && err.code !== STATUS_NO_SUCH_FILE) return reject(sftpError('rmdir', p, err));
              resolve();
            }),
          ),
        );
      }
    },

    isDir,
  };
}
