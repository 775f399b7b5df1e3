/**
 * One authenticated SFTP session (SFTP v3, draft-ietf-secsh-filexfer-02) over a product's
 * tree. Every request resolves its path(s) through `resolveTreePath` first, so confinement is
 * decided in one place; files change only through the files service (atomic uploads, quotas,
 * the record of finished uploads).
 */
import type { Attributes, FileEntry, SFTPWrapper } from 'ssh2';
import ssh2 from 'ssh2';

const { utils } = ssh2;
import type { StoredEntry } from '../../infra/storage.js';
import { QuotaExceededError, type FilesService } from '../files/service.js';
import type { Handle } from './handles.js';
import { CredentialRevokedError, type CredentialUse, deny, failure, missing, RESUME_REFUSED, statusOf, unsupported } from './refusals.js';
import { AREAS, creationProblem, resolveTreePath, type TreePath, TreePathError } from '../files/tree.js';
import { attrsOf, entryOf, longname } from './attrs.js';
import type { SftpMetrics } from './metrics.js';
import type { SessionPacer } from './pacer.js';

const { STATUS_CODE, OPEN_MODE } = utils.sftp;

export { CredentialRevokedError, type CredentialUse } from './refusals.js';

export interface SessionLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SessionContext {
  productId: string;
  files: FilesService;
  log: SessionLog;
  /** Called on every request (the connection's idle timeout restarts). */
  activity?: () => void;
  /**
   * Throws CredentialRevokedError once the credential this session logged in with no longer
   * allows `use` (credential-watch.ts); awaited before every request that opens or changes files.
   */
  checkCredential?: (use: CredentialUse) => Promise<void>;
  /** Paces the session's requests (see pacer.ts); unpaced without it. */
  pacer?: SessionPacer;
  /** Counts bytes and uploads (metrics.ts); null or absent while metrics are off. */
  metrics?: SftpMetrics | null;
  /** Called when a CLOSE leaves the session without open handles (a drain ends it then). */
  onIdle?: () => void;
  /** True once the server drains (SIGTERM): transfers in progress finish, new ones are refused. */
  draining?: () => boolean;
}

/** What the server may ask of a running session. */
export interface ServedSession {
  /** Whether a transfer or listing is in progress (a handle is open or being opened). */
  busy(): boolean;
}

/**
 * Open handles per session: enough for lftp/rclone parallel transfers, bounded against abuse
 * (with at most 2 channels per connection and the per-product session cap, this bounds the
 * descriptors one product can hold).
 */
export const MAX_HANDLES = 64;
/** Largest READ answered (OpenSSH's own server caps at 256 KiB too). */
const MAX_READ = 256 * 1024;
/**
 * Entries per READDIR answer (OpenSSH's sftp-server sends 100). The folder is read as the client
 * asks, so an open folder handle holds one batch, not the folder: a client holding every handle
 * on a huge folder holds little memory, and no request stats more than a batch.
 */
export const READDIR_BATCH = 100;

/**
 * Pacing costs, in requests. A refusal or error costs more than a success: it is cheap for a
 * client to provoke by the thousand (OPENs over the handle cap) and does nothing for a real
 * client, which seldom gets one. Each listed entry is an lstat on the disk's thread pool, which
 * the download host shares. Data requests cost by size, so a large file moves at full speed.
 */
const REFUSAL_COST = 4;
const PER_LISTED_ENTRY = 0.1;
const dataCost = (bytes: number) => 0.25 + bytes / (256 * 1024);

export function serveSftp(sftp: SFTPWrapper, ctx: SessionContext): ServedSession {
  const { productId, files, log } = ctx;
  const metrics = ctx.metrics ?? null;
  const stillAllowed = ctx.checkCredential ?? (async (_use: CredentialUse) => {});
  const storage = files.storage;
  const handles = new Map<number, Handle>();
  /** OPENs between their cap check and their handle: they count against the cap too. */
  let opening = 0;
  let closed = false;
  let nextHandle = 1;
  const key = (p: string) => files.key(productId, p);

  function resolve(raw: string, forWrite = false): TreePath {
    try {
      return resolveTreePath(raw);
    } catch (e) {
      if (e instanceof TreePathError) {
        // Outside the three folders nothing exists to read, and nothing may be created.
        if (e.reason === 'outside') throw forWrite ? deny(e.message) : missing(e.message);
        throw failure(e.message);
      }
      throw e;
    }
  }

  async function describe(p: TreePath): Promise<StoredEntry & { readOnly?: boolean }> {
    if (p.kind === 'root') return { name: '/', type: 'dir', size: 0, mtimeMs: Date.now(), readOnly: true };
    const st = await storage.stat(key(p.path));
    if (st) return st;
    if (p.kind === 'area') return { name: p.area, type: 'dir', size: 0, mtimeMs: Date.now() };
    throw missing();
  }

  function requireCreatable(p: TreePath, kind: 'file' | 'dir'): asserts p is Extract<TreePath, { kind: 'inside' }> {
    const problem = creationProblem(p, kind);
    if (problem) throw deny(problem);
  }

  async function requireParentDir(p: Extract<TreePath, { kind: 'inside' }>): Promise<void> {
    const parent = p.path.slice(0, p.path.lastIndexOf('/'));
    const st = await storage.stat(key(parent));
    if (st?.type !== 'dir') throw missing('The parent folder does not exist');
  }

  /** Releases what a handle holds (a descriptor, a temporary upload file); never throws. */
  async function release(h: Handle): Promise<void> {
    if (h.kind === 'write') await h.upload.abort().catch(() => {});
    if (h.kind === 'read') await h.reader.close().catch(() => {});
    if (h.kind === 'dir') await h.list?.close();
  }

  /**
   * Answers an OPEN or OPENDIR with a new handle. The cap is checked, and a place taken, before
   * `acquire` opens anything: a refused request must hold nothing (each refused OPEN used to
   * keep a descriptor, and a write one a temporary file, until the process ran out of them).
   * Whatever `acquire` returns after the session closed is released at once.
   */
  async function openHandle(reqid: number, acquire: () => Promise<Handle>): Promise<void> {
    if (closed) throw failure('The session is closed');
    if (ctx.draining?.()) throw failure('The server is restarting: connect again to continue');
    if (handles.size + opening >= MAX_HANDLES) throw failure(`Too many open handles (limit ${MAX_HANDLES})`);
    opening++;
    let h: Handle;
    try {
      h = await acquire();
    } finally {
      opening--;
    }
    if (closed) {
      await release(h);
      throw failure('The session is closed');
    }
    const id = nextHandle++;
    handles.set(id, h);
    const buf = Buffer.allocUnsafe(4);
    buf.writeUInt32BE(id >>> 0, 0);
    sftp.handle(reqid, buf);
  }

  function handleOf(buf: Buffer): [number, Handle] {
    const id = buf.length === 4 ? buf.readUInt32BE(0) : -1;
    const h = handles.get(id);
    if (!h) throw failure('Invalid handle');
    return [id, h];
  }

  /** Runs one request; refusals and storage errors become the matching status, never a crash. */
  function run(reqid: number, op: string, work: () => Promise<void>, cost = 1): void {
    ctx.activity?.();
    const turn = ctx.pacer?.admit(cost);
    (turn ? turn.then(work) : work()).catch((e: unknown) => {
      ctx.pacer?.charge(REFUSAL_COST);
      const answer = statusOf(e);
      if (answer) return sftp.status(reqid, answer.status, answer.message);
      log.error({ productId, op, err: e }, 'sftp request failed');
      sftp.status(reqid, STATUS_CODE.FAILURE, 'Internal error');
    });
  }

  const ok = (reqid: number) => sftp.status(reqid, STATUS_CODE.OK);

  sftp.on('OPEN', (reqid: number, filename: string, flags: number) =>
    run(reqid, 'open', async () => {
      const writing = (flags & (OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.CREAT | OPEN_MODE.TRUNC)) !== 0;
      const p = resolve(filename, writing);
      if (p.kind !== 'inside') throw failure('Is a folder');
      if (!writing) {
        await stillAllowed('read');
        return openHandle(reqid, async () => {
          const reader = await storage.openRead(key(p.path));
          if (!reader) {
            const st = await storage.stat(key(p.path));
            throw st ? failure('Is a folder') : missing();
          }
          return { kind: 'read', path: p.path, reader };
        });
      }
      requireCreatable(p, 'file');
      await stillAllowed('change');
      return openHandle(reqid, async () => {
        // The checks of what exists run while the files service reads the limits; a missing
        // parent folder makes the temporary file's creation fail with "no such file".
        const upload = await files.beginUpload(productId, p.path, {
          keepExisting: async () => {
            const existing = await storage.stat(key(p.path));
            if (existing?.type === 'dir') throw failure('Is a folder');
            if (existing && flags & OPEN_MODE.EXCL) throw failure('Already exists');
            if (!existing && !(flags & OPEN_MODE.CREAT)) throw missing();
            if (existing && flags & OPEN_MODE.APPEND && !(flags & OPEN_MODE.TRUNC)) throw unsupported(RESUME_REFUSED);
            // Without TRUNC the client may rewrite parts of the file: start from a copy.
            return !!existing && !(flags & OPEN_MODE.TRUNC);
          },
        });
        return {
          kind: 'write',
          path: p.path,
          upload,
          appendAt: flags & OPEN_MODE.APPEND ? upload.size : null,
          keptUntilFirstWrite: upload.size > 0 ? upload.size : null,
          failed: null,
          times: null,
          inFlight: new Set(),
        };
      });
    }),
  );

  sftp.on('READ', (reqid: number, handle: Buffer, offset: number, length: number) =>
    run(reqid, 'read', async () => {
      const [, h] = handleOf(handle);
      if (h.kind === 'dir') throw failure('Is a folder');
      // Stored files never change in place (uploads rename over them), so the size at open
      // bounds the read: a 32 KiB request for a 2 KiB file allocates 2 KiB.
      const left = h.kind === 'read' ? Math.max(1, h.reader.size - offset) : MAX_READ;
      const buf = Buffer.allocUnsafe(Math.min(length, MAX_READ, left));
      const n = h.kind === 'read' ? await h.reader.read(buf, 0, buf.length, offset) : await h.upload.read(buf, 0, buf.length, offset);
      if (n === 0) sftp.status(reqid, STATUS_CODE.EOF);
      else {
        metrics?.downloadedBytes.inc(n);
        sftp.data(reqid, n === buf.length ? buf : buf.subarray(0, n));
      }
    }, dataCost(Math.min(length, MAX_READ))),
  );

  sftp.on('WRITE', (reqid: number, handle: Buffer, offset: number, data: Buffer) =>
    run(reqid, 'write', async () => {
      const [, h] = handleOf(handle);
      if (h.kind !== 'write') throw failure('Handle not open for writing');
      if (h.failed) throw failure(h.failed);
      if (h.keptUntilFirstWrite !== null) {
        if (offset >= h.keptUntilFirstWrite) {
          h.failed = RESUME_REFUSED;
          await h.upload.abort();
          throw unsupported(RESUME_REFUSED);
        }
        h.keptUntilFirstWrite = null;
      }
      // Pipelined writes land at their own offsets (OpenSSH keeps up to 64 in flight); with
      // APPEND the offset is ignored and the place is taken now, before any await.
      let position = offset;
      if (h.appendAt !== null) {
        position = h.appendAt;
        h.appendAt += data.length;
      }
      const write = h.upload.write(data, 0, data.length, position);
      h.inFlight.add(write);
      try {
        await write;
      } catch (e) {
        // The first failed write fails the upload: later writes and the CLOSE answer the same,
        // and nothing with a hole in it is committed. A storage error (the file could not be
        // created or written: no space, too many open files) is logged once, not per write.
        if (!h.failed) {
          if (e instanceof QuotaExceededError) {
            h.failed = e.message;
            log.warn({ productId, path: h.path }, `upload refused: ${e.message}`);
          } else {
            h.failed = statusOf(e)?.message ?? 'The file could not be stored';
            log.error({ productId, path: h.path, err: e }, 'sftp upload failed');
          }
          await h.upload.abort();
        }
        throw failure(h.failed);
      } finally {
        h.inFlight.delete(write);
      }
      metrics?.uploadedBytes.inc(data.length);
      ok(reqid);
    }, dataCost(data.length)),
  );

  sftp.on('CLOSE', (reqid: number, handle: Buffer) =>
    run(reqid, 'close', async () => {
      const [id, h] = handleOf(handle);
      handles.delete(id);
      if (h.kind === 'read') await h.reader.close();
      if (h.kind === 'dir') await h.list?.close();
      if (h.kind === 'write') {
        await Promise.allSettled([...h.inFlight]);
        if (h.failed) {
          metrics?.uploads.inc({ outcome: 'refused' });
          await h.upload.abort();
          throw failure(h.failed);
        }
        // An upload opened while the credential was current commits after it expired, not
        // after it was revoked.
        await stillAllowed('finish').catch(async (e: unknown) => {
          if (e instanceof CredentialRevokedError) metrics?.uploads.inc({ outcome: 'refused' });
          await h.upload.abort();
          throw e;
        });
        // The upload becomes visible only now, in one rename (spec: uploads overwrite), if the
        // product's files still fit its quotas with it (parallel uploads finish in between).
        const entry = await h.upload.commit(h.times ?? undefined).catch((e: unknown) => {
          if (e instanceof QuotaExceededError) {
            log.warn({ productId, path: h.path }, `upload refused: ${e.message}`);
            metrics?.uploads.inc({ outcome: 'refused' });
          }
          throw e;
        });
        metrics?.uploads.inc({ outcome: 'committed' });
        log.info({ productId, path: h.path, size: entry.size }, 'sftp upload finished');
      }
      ok(reqid);
      // After the reply is queued: a drain that ends the session now still sends it first.
      if (handles.size === 0 && opening === 0 && ctx.onIdle) setImmediate(ctx.onIdle);
    }),
  );

  sftp.on('FSTAT', (reqid: number, handle: Buffer) =>
    run(reqid, 'fstat', async () => {
      const [, h] = handleOf(handle);
      if (h.kind === 'read') sftp.attrs(reqid, attrsOf({ type: 'file', size: h.reader.size, mtimeMs: h.reader.mtimeMs }));
      else if (h.kind === 'write') {
        sftp.attrs(reqid, attrsOf({ type: 'file', size: h.upload.size, mtimeMs: h.times?.mtimeMs ?? Date.now() }));
      } else sftp.attrs(reqid, attrsOf(await describe(h.path)));
    }),
  );

  /** Times are kept (rsync-like `put -p`, WinSCP, rclone set them); permissions and owners ignored. */
  function timesOf(attrs: Attributes): { atimeMs: number; mtimeMs: number } | null {
    if (typeof attrs?.mtime !== 'number') return null;
    return { atimeMs: (typeof attrs.atime === 'number' ? attrs.atime : attrs.mtime) * 1000, mtimeMs: attrs.mtime * 1000 };
  }

  sftp.on('FSETSTAT', (reqid: number, handle: Buffer, attrs: Attributes) =>
    run(reqid, 'fsetstat', async () => {
      const [, h] = handleOf(handle);
      const times = timesOf(attrs);
      if (times && h.kind === 'write') h.times = times;
      else if (times && h.kind === 'read') {
        await stillAllowed('change');
        await files.setTimes(productId, h.path, times.atimeMs, times.mtimeMs);
      }
      ok(reqid);
    }),
  );

  sftp.on('SETSTAT', (reqid: number, path: string, attrs: Attributes) =>
    run(reqid, 'setstat', async () => {
      await stillAllowed('change');
      const p = resolve(path);
      await describe(p);
      const times = timesOf(attrs);
      if (times && p.kind === 'inside') await files.setTimes(productId, p.path, times.atimeMs, times.mtimeMs);
      ok(reqid);
    }),
  );

  const stat = (reqid: number, path: string) =>
    run(reqid, 'stat', async () => {
      sftp.attrs(reqid, attrsOf(await describe(resolve(path))));
    });
  sftp.on('STAT', stat);
  sftp.on('LSTAT', stat);

  sftp.on('OPENDIR', (reqid: number, path: string) =>
    run(reqid, 'opendir', async () => {
      const p = resolve(path);
      const self = await describe(p);
      if (self.type !== 'dir') throw failure('Not a folder');
      await stillAllowed('read');
      await openHandle(reqid, async () => {
        const now = Date.now();
        const parent = { type: 'dir' as const, size: 0, mtimeMs: now };
        const first: FileEntry[] = [
          { filename: '.', longname: longname('.', self), attrs: attrsOf(self) },
          { filename: '..', longname: longname('..', parent), attrs: attrsOf(parent) },
        ];
        if (p.kind === 'root') first.push(...AREAS.map((a) => entryOf({ name: a, type: 'dir', size: 0, mtimeMs: now })));
        const list = p.kind === 'root' ? null : await storage.openList(key(p.path));
        return { kind: 'dir', path: p, first, list };
      });
    }),
  );

  sftp.on('READDIR', (reqid: number, handle: Buffer) =>
    run(reqid, 'readdir', async () => {
      const [, h] = handleOf(handle);
      if (h.kind !== 'dir') throw failure('Not a folder');
      const batch = h.first.splice(0, READDIR_BATCH);
      if (batch.length < READDIR_BATCH && h.list) {
        const listed = await h.list.next(READDIR_BATCH - batch.length);
        ctx.pacer?.charge(listed.length * PER_LISTED_ENTRY);
        batch.push(...listed.map(entryOf));
      }
      // A listing ends with an EOF status, or OpenSSH and others wait forever (ssh2 #560).
      if (batch.length === 0) return void sftp.status(reqid, STATUS_CODE.EOF);
      sftp.name(reqid, batch);
    }),
  );

  sftp.on('REALPATH', (reqid: number, path: string) =>
    run(reqid, 'realpath', async () => {
      const p = resolve(path);
      const name = p.kind === 'root' ? '/' : `/${p.path}`;
      sftp.name(reqid, [{ filename: name, longname: name, attrs: {} as Attributes }]);
    }),
  );

  sftp.on('MKDIR', (reqid: number, path: string) =>
    run(reqid, 'mkdir', async () => {
      await stillAllowed('change');
      const p = resolve(path, true);
      if (p.kind !== 'inside') throw failure('Already exists');
      requireCreatable(p, 'dir');
      await requireParentDir(p);
      await files.makeDir(productId, p.path);
      ok(reqid);
    }),
  );

  sftp.on('RMDIR', (reqid: number, path: string) =>
    run(reqid, 'rmdir', async () => {
      await stillAllowed('change');
      const p = resolve(path, true);
      if (p.kind !== 'inside') throw deny('The root and its three folders are fixed');
      const st = await storage.stat(key(p.path));
      if (!st) throw missing();
      if (st.type !== 'dir') throw failure('Not a folder');
      await files.removeDir(productId, p.path);
      ok(reqid);
    }),
  );

  sftp.on('REMOVE', (reqid: number, path: string) =>
    run(reqid, 'remove', async () => {
      await stillAllowed('change');
      const p = resolve(path, true);
      if (p.kind !== 'inside') throw deny('The root and its three folders are fixed');
      if (!(await files.remove(productId, p.path))) throw missing();
      log.info({ productId, path: p.path }, 'sftp file removed');
      ok(reqid);
    }),
  );

  sftp.on('RENAME', (reqid: number, oldPath: string, newPath: string) =>
    run(reqid, 'rename', async () => {
      await stillAllowed('change');
      const from = resolve(oldPath, true);
      const to = resolve(newPath, true);
      if (from.kind !== 'inside') throw deny('The root and its three folders are fixed');
      const source = await storage.stat(key(from.path));
      if (!source) throw missing();
      requireCreatable(to, source.type);
      await requireParentDir(to);
      if (to.path === from.path) return ok(reqid);
      if (source.type === 'dir' && (to.path.startsWith(`${from.path}/`) || false)) throw failure('Cannot move a folder into itself');
      const target = await storage.stat(key(to.path));
      // Files replace files (uploads overwrite, spec "SFTP upload"); folders are never replaced.
      if (target && (target.type === 'dir' || source.type === 'dir')) throw failure('Already exists');
      await files.rename(productId, from.path, to.path);
      log.info({ productId, from: from.path, to: to.path }, 'sftp rename');
      ok(reqid);
    }),
  );

  sftp.on('SYMLINK', (reqid: number) =>
    run(reqid, 'symlink', async () => {
      throw deny('Symbolic links are not allowed');
    }),
  );
  sftp.on('READLINK', (reqid: number, path: string) =>
    run(reqid, 'readlink', async () => {
      await describe(resolve(path));
      throw failure('Not a symbolic link');
    }),
  );

  // The client is done sending (EOF): close our side too, or OpenSSH waits for it forever.
  sftp.on('end', () => sftp.end());
  // The client went away (or the connection broke): unfinished uploads leave nothing behind.
  sftp.on('close', () => {
    closed = true;
    for (const h of handles.values()) void release(h);
    handles.clear();
  });
  return { busy: () => handles.size + opening > 0 };
}
