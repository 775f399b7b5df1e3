/**
 * Sends a byte range of a stored file that is too big for memory: two reused buffers of up to
 * 1 MiB, one being read while the other is written, so there is no allocation per chunk and
 * reading overlaps writing. About 10–40% more throughput than a 1 MiB read stream piped into the
 * response in alternating runs here (200 MB over loopback); Node has no zero-copy file-to-socket
 * path. Backpressure: a buffer is read into again only once its write has completed, so at most
 * two chunks (2 MiB) wait for a slow client.
 *
 * A file sent whole a short while ago is read synchronously, as nginx's worker reads (it blocks
 * on its reads unless given threads): its bytes are most likely still in the page cache, where
 * a read takes tens of microseconds and the thread pool's round trip per chunk would cost about
 * a tenth of the throughput (bench/downloads.ts). Only storage on a local disk offers such
 * reads (never a network file system, where a read may wait for seconds). Synchronous reads
 * that take longer than SLOW_READ_NS came from the disk: that file is no longer warm, so
 * every download of it reads through the thread pool from then on, and the event loop is held
 * up by two such reads each time the file drops out of the page cache.
 */
import type http from 'node:http';
import type { StoredReader } from '../../infra/storage.js';

const CHUNK = 1024 * 1024;
/** Once this much is held in large buffers across all downloads, new buffers are SMALL. */
const LARGE_BUDGET = 64 * CHUNK;
const SMALL = 64 * 1024;
/**
 * Bytes held in buffers by downloads in progress: many slow clients (each holding two buffers
 * while the kernel's send buffer is full) would otherwise pin 2 MiB each.
 */
let held = 0;

/** Files (by content id) sent whole lately, oldest first: their bytes are likely cached. */
const warm = new Set<string>();
const WARM_FILES = 256;
/**
 * Synchronous reads slower than this (1 ms) did not come from memory: 1 MiB from the page cache
 * takes about 0.1 ms here (p99 0.2 ms), one from an SSD several times that. Two in a row are
 * needed, as on a busy machine a read from memory is now and then held up as long (the thread
 * was not scheduled), while reads from the disk are slow one after the other.
 */
const SLOW_READ_NS = 1_000_000n;
const SLOW_READS_IN_A_ROW = 2;

function rememberWarm(id: string): void {
  warm.delete(id);
  warm.add(id);
  if (warm.size > WARM_FILES) warm.delete(warm.values().next().value as string);
}

function takeBuffer(wanted: number): Buffer {
  const size = held + wanted > LARGE_BUDGET ? Math.min(wanted, SMALL) : wanted;
  held += size;
  return Buffer.allocUnsafeSlow(size);
}

/** Bytes currently held by downloads in progress (tests). */
export function sendBuffersHeld(): number {
  return held;
}

export interface SendOptions {
  /** Nanoseconds from any fixed point, read around each synchronous read; process.hrtime.bigint unless set (tests). */
  clock?: () => bigint;
}

/**
 * `id` names the file's content (its strong ETag will do): see "sent whole lately" above.
 * Resolves true once the whole range was written to the connection, false when it was cut off.
 */
export async function sendRange(res: http.ServerResponse, reader: StoredReader, id: string, start: number, end: number, options: SendOptions = {}): Promise<boolean> {
  const clock = options.clock ?? process.hrtime.bigint;
  // A pipelined response queued behind another never gets 'close' from node:http when the
  // connection goes, and its writes never complete: the connection's own 'close' ends it too,
  // or its descriptor and buffers would be held for ever.
  const socket = res.req.socket;
  let gone = false;
  let onGone: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    onGone = () => {
      gone = true;
      resolve();
    };
  });
  res.once('close', onGone);
  socket.once('close', onGone);
  if (socket.destroyed) onGone();
  const buffers: Buffer[] = [];
  const written: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  let position = start;
  const readNow = reader.readNow?.bind(reader);
  let slowInARow = 0;
  let slow = false;
  try {
    // Queued behind an earlier response on the same connection: read nothing and hold no
    // buffer until node:http hands this response the socket (its turn).
    if (!res.socket) await Promise.race([new Promise<void>((resolve) => res.once('socket', () => resolve())), closed]);
    for (let i = 0; position <= end && !gone; i ^= 1) {
      // The buffer's previous write must be out before it is read into again.
      await Promise.race([written[i], closed]);
      if (gone) return false;
      // Sized to what is left: a small range never takes two full chunks.
      let buffer = buffers[i];
      if (!buffer) {
        buffer = takeBuffer(Math.min(CHUNK, end + 1 - position));
        buffers[i] = buffer;
      }
      const length = Math.min(buffer.length, end + 1 - position);
      let n: number;
      // Asked before every read: once any download of the file met a slow read, the others
      // read through the thread pool too.
      if (readNow && warm.has(id)) {
        const started = clock();
        n = readNow(buffer, 0, length, position);
        slowInARow = clock() - started > SLOW_READ_NS ? slowInARow + 1 : 0;
        if (slowInARow >= SLOW_READS_IN_A_ROW) {
          slow = true;
          warm.delete(id);
        }
      } else n = await reader.read(buffer, 0, length, position);
      if (gone) return false;
      // The file shrank under us: the promised length cannot be sent, so the client must not
      // take what it got for the whole file.
      if (n === 0) {
        res.destroy();
        return false;
      }
      position += n;
      written[i] = new Promise<void>((resolve) => res.write(n === buffer.length ? buffer : buffer.subarray(0, n), () => resolve()));
    }
    await Promise.race([Promise.all(written), closed]);
    if (gone) return false;
    res.end();
    // A download that met a slow read does not vouch for the file (it may not fit the cache).
    if (start === 0 && end === reader.size - 1 && !slow) rememberWarm(id);
    return true;
  } catch {
    res.destroy();
    return false;
  } finally {
    res.removeListener('close', onGone);
    socket.removeListener('close', onGone);
    for (const b of buffers) held -= b.length;
    await reader.close();
  }
}
