/**
 * The fast path of the download host and of the public pages: a plain GET or HEAD of an answer
 * already built in memory (a small file, a cached page) is answered straight from the socket,
 * without node:http's per-request machinery (about half of what a request costs here;
 * bench/downloads.ts, bench/pages.ts). Everything else goes to node:http.
 *
 * Correctness rests on three rules, each checked by test/publishing/downloads/fast-path.test.ts
 * and test/publishing/web/page-fast-path.test.ts against the same server with the fast path off:
 * 1. Only what request-head.ts recognises, for an answer `lookup` finds cached and current, is
 *    answered here, with the very bytes node:http sends for it (status line, the answer's
 *    prebuilt headers in the same order, Date, Connection/Keep-Alive).
 * 2. The data read so far is answered here only when ALL of it is such requests (complete
 *    heads, nothing after a `Connection: close`); otherwise the connection is handed to
 *    node:http at the first unanswered request with every unanswered byte put back
 *    (`socket.unshift`), so node:http parses exactly what it would have parsed. A connection
 *    handed over stays with node:http; an error is never answered here.
 * 3. Responses go out in request order; reading waits while the socket's buffer is full.
 * One difference remains, node:http's own: bytes put back are parsed from the socket's stream,
 * not by its native reader, and for data holding a request with a body followed by a malformed
 * one it then leaves out answers it had not written when it met the error (the client gets a
 * 400 or a closed connection either way, and retries the rest, RFC 9112 §9.3.2).
 * Idle connections close like node:http's: after `headersTimeout` without a first request
 * (with its 408), after `keepAliveTimeout` (+1 s, as node:http does) between requests. A head that is not
 * complete in the data read so far goes to node:http, which applies its own headers timeout.
 */
import type http from 'node:http';
import type net from 'node:net';
import type { HostCounts } from '../metrics/hosts.js';
import { parseSimpleHead, type SimpleRequest } from './request-head.js';

/** A complete 200 answer kept in memory: its headers as node:http's `writeHead` takes them, and its body. */
export interface FastAnswer {
  /** Every header of the answer, content-length included, in the order node:http writes them. */
  full: http.OutgoingHttpHeaders;
  data: Buffer;
}

export interface FastPathOptions {
  /** The answer this request-target names, if it is in memory and current; else null. */
  lookup(target: string): FastAnswer | null | Promise<FastAnswer | null>;
  /** Where answers sent here are counted (infra/metrics/hosts.ts); null or absent while metrics are off. */
  counts?: HostCounts | null;
  /** Called after the whole answer to each GET sent here was handed to `socket` (the download host counts downloads with it). */
  delivered?(answer: FastAnswer, socket: net.Socket, request: SimpleRequest): void;
  /** Called after each answer sent here (the request log line); `socket` is the client's connection. */
  served?(request: SimpleRequest, startedNs: bigint, socket: net.Socket, requestId: string | null): void;
  /**
   * The id of a request answered here, from the X-Request-Id it sent (null: none) and the peer's
   * address, as the app's own requests get theirs (infra/request-id.ts); answered in an
   * `x-request-id` header. Without it answers carry no id.
   */
  requestId?(sent: string | null, peer: string | undefined): string;
}

export interface FastPath {
  /** Destroys every connection still held by the fast path (server shutdown). */
  closeAll(): void;
  /**
   * Draining (SIGTERM): closes the held connections that wait for a request now, and every
   * other one once the answers it is writing are out; none takes another request.
   */
  closeIdle(): void;
}

/** What node:http sends to a connection that sent no request in time (lib/_http_server.js). */
const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';

/** How long a connection's last answer may make no progress when keep-alive is off. */
const LAST_ANSWER_TIMEOUT_MS = 5000;

/** node:http's own margin on the advertised keep-alive timeout (lib/_http_server.js). */
const KEEP_ALIVE_TIMEOUT_BUFFER = 1000;

/** node:http sends the Date of the current second, cached per second. */
let dateSecond = -1;
let dateValue = '';
function dateHeader(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateValue = new Date(now).toUTCString();
    // Whole answers carry the Date: those built in the last second are stale now.
    whole.clear();
    slotted.clear();
  }
  return dateValue;
}

const STATUS_LINE = 'HTTP/1.1 200 OK\r\n';

/** The file's header lines as node:http writes them for `writeHead(200, file.full)`. */
const heads = new WeakMap<FastAnswer, string>();
function headersOf(file: FastAnswer): string {
  let head = heads.get(file);
  if (head === undefined) {
    head = '';
    for (const [name, value] of Object.entries(file.full)) {
      for (const v of Array.isArray(value) ? value : [value]) head += `${name}: ${v}\r\n`;
    }
    heads.set(file, head);
  }
  return head;
}

/**
 * Whole answers (head and bytes in one buffer: one write call instead of a writev of two)
 * are kept for at most this many answers of at most WHOLE_MAX_BYTES each, rebuilt once a
 * second for the Date: at most 64 x 128 KiB = 8 MiB beside the caches. Larger answers, and all
 * when full, go out as two writes.
 */
const WHOLE_MAX_ENTRIES = 64;
const WHOLE_MAX_BYTES = 128 * 1024;
const whole = new Map<string, Buffer>();
const wholeKeys = new WeakMap<FastAnswer, string>();
let wholeSeq = 0;

/**
 * Whole answers that carry a request id: one write, like the answers without one. The id of each
 * request differs, so the buffer keeps a slot of ID_SLOT characters that each answer writes its
 * id into before the buffer goes out. Two writes (head, then the file's bytes) cost a quarter
 * of the throughput of a 30 KB file: the kernel does more work per answer for a writev of two
 * here (bench/downloads.ts). A buffer is only rewritten once the kernel has taken all of it: an
 * answer the socket could not take whole stays queued on that buffer, so the buffer is dropped
 * (`inFlight`) and the next answer builds another.
 */
const ID_SLOT = 36; // a UUID: the ids requestIdOf makes (infra/request-id.ts)
const slotted = new Map<string, { buffer: Buffer; at: number }>();
const slottedKeys = new WeakMap<Buffer, string>();

function slottedAnswer(file: FastAnswer, key: string, date: string, tail: string, requestId: string): Buffer | null {
  let entry = slotted.get(key);
  if (entry === undefined) {
    if (slotted.size >= WHOLE_MAX_ENTRIES || file.data.length > WHOLE_MAX_BYTES) return null;
    const before = `${STATUS_LINE}x-request-id: `;
    const head = `${before}${' '.repeat(ID_SLOT)}\r\n${headersOf(file)}Date: ${date}\r\n${tail}`;
    entry = { buffer: Buffer.concat([Buffer.from(head, 'latin1'), file.data]), at: before.length };
    slotted.set(key, entry);
    slottedKeys.set(entry.buffer, key);
  }
  entry.buffer.write(requestId, entry.at, ID_SLOT, 'latin1');
  return entry.buffer;
}

/**
 * Bytes of answers dropped from `slotted` that a socket still holds (each its own copy of the
 * file), counted until the socket drains or closes. Past PINNED_MAX_BYTES, answers with an id
 * go out as two writes that share the cached bytes: clients that read slowly cannot make each
 * answer a private copy of the file.
 */
let pinnedBytes = 0;
const PINNED_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The socket kept a reference to `answer` (not all of it was written at once): it is never
 * rewritten, and counted as pinned while the socket holds it.
 */
function inFlight(answer: Buffer, socket: net.Socket): void {
  const key = slottedKeys.get(answer);
  if (key === undefined || slotted.get(key)?.buffer !== answer) return;
  slotted.delete(key);
  // Below the socket's high-water mark no 'drain' comes: such a remainder is small and held
  // briefly, and not counted.
  if (!socket.writableNeedDrain) return;
  const bytes = answer.length;
  pinnedBytes += bytes;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    pinnedBytes -= bytes;
    socket.removeListener('drain', release);
    socket.removeListener('close', release);
  };
  socket.on('drain', release);
  socket.on('close', release);
}

/** A number for each answer kept whole, for the keys of `whole` and `slotted`. */
function wholeKeyOf(file: FastAnswer): string {
  let id = wholeKeys.get(file);
  if (id === undefined) {
    id = String(wholeSeq++);
    wholeKeys.set(file, id);
  }
  return id;
}

/** The complete answer to a plain GET or HEAD of `file`, as node:http writes it. */
function answerOf(file: FastAnswer, body: boolean, tail: string, requestId: string | null, socket: net.Socket): Buffer | [string, Buffer] {
  const date = dateHeader();
  // The id is set before the answer's own headers (as node:http orders a setHeader before writeHead's).
  if (!body || file.data.length === 0) return Buffer.from(`${STATUS_LINE}${idLine(requestId)}${headersOf(file)}Date: ${date}\r\n${tail}`, 'latin1');
  const key = wholeKeyOf(file) + tail;
  if (requestId !== null) {
    // A socket with answers queued would hold this one too: no slot, no copy (see pinnedBytes).
    const slot = requestId.length === ID_SLOT && socket.writableLength === 0 && pinnedBytes < PINNED_MAX_BYTES;
    const answer = slot ? slottedAnswer(file, key, date, tail, requestId) : null;
    return answer ?? [`${STATUS_LINE}${idLine(requestId)}${headersOf(file)}Date: ${date}\r\n${tail}`, file.data];
  }
  let answer = whole.get(key);
  if (answer === undefined) {
    const head = `${STATUS_LINE}${headersOf(file)}Date: ${date}\r\n${tail}`;
    if (whole.size >= WHOLE_MAX_ENTRIES || file.data.length > WHOLE_MAX_BYTES) return [head, file.data];
    answer = Buffer.concat([Buffer.from(head, 'latin1'), file.data]);
    whole.set(key, answer);
  }
  return answer;
}

/** The request id's header line; its name spelled as the app sets it (infra/http.ts). */
const idLine = (requestId: string | null) => (requestId === null ? '' : `x-request-id: ${requestId}\r\n`);

/** The end of an answer's head, by whether the connection closes and the keep-alive timeout. */
let tails = { keepAliveTimeout: Number.NaN, close: '', keepAlive: '' };
function tailOf(close: boolean, keepAliveTimeout: number): string {
  if (tails.keepAliveTimeout !== keepAliveTimeout) {
    const advertised = keepAliveTimeout > 0 ? `Keep-Alive: timeout=${Math.floor(keepAliveTimeout / 1000)}\r\n` : '';
    tails = { keepAliveTimeout, close: 'Connection: close\r\n\r\n', keepAlive: `Connection: keep-alive\r\n${advertised}\r\n` };
  }
  return close ? tails.close : tails.keepAlive;
}

/**
 * Takes over `server`'s connections: each new one starts on the fast path and is given to
 * node:http's own connection handler when needed. The server keeps listening, tracking
 * handed-over connections and enforcing its timeouts itself.
 */
export function installFastPath(server: http.Server, options: FastPathOptions): FastPath | null {
  const listeners = server.listeners('connection');
  const nodeListener = listeners[0];
  // node:http registers exactly one `connection` listener at construction; anything else means
  // this is not the server this module was written against: serve everything through
  // node:http (slower, never wrong) rather than refuse to start.
  if (listeners.length !== 1 || typeof nodeListener !== 'function' || nodeListener.name !== 'connectionListener') return null;
  server.removeListener('connection', nodeListener as (s: net.Socket) => void);
  const held = new Set<net.Socket>();
  const counts = options.counts ?? null;
  /** Each held connection's "close when idle" (see `closeIdle`). */
  const idleClosers = new Map<net.Socket, () => void>();
  let draining = false;
  server.on('connection', (socket: net.Socket) => accept(socket));

  function accept(socket: net.Socket): void {
    held.add(socket);
    let pending: Buffer | null = null;
    let busy = false;
    let ended = false;
    let done = false;
    let answered = false;

    const onData = (chunk: Buffer) => {
      pending = pending ? Buffer.concat([pending, chunk]) : chunk;
      if (!busy) run().catch(() => finish(() => socket.destroy()));
    };
    const onEnd = () => {
      ended = true;
      // As node:http (httpAllowHalfOpen off): a client that stops sending is answered, then closed.
      if (!busy) finish(() => socket.end());
    };
    const onTimeout = () =>
      finish(() => {
        // As node:http: no request within headersTimeout is answered 408 before the close; a
        // connection idle past keepAliveTimeout after its answers is just closed.
        if (!answered && !busy) socket.write(REQUEST_TIMEOUT, 'latin1');
        socket.destroy();
      });
    const onError = () => finish(() => socket.destroy());
    const onClose = () => finish(() => {});

    function detach(): void {
      done = true;
      held.delete(socket);
      idleClosers.delete(socket);
      socket.removeListener('data', onData);
      socket.removeListener('end', onEnd);
      socket.removeListener('timeout', onTimeout);
      socket.removeListener('error', onError);
      socket.removeListener('close', onClose);
    }

    function finish(last: () => void): void {
      if (done) return;
      detach();
      // Still listening for errors: a reset after the last answer must not crash the process.
      socket.on('error', () => socket.destroy());
      last();
    }

    function handOver(unanswered: Buffer | null): void {
      if (done) return;
      if (ended) {
        // Only reachable when a lookup waits for real I/O and the client half-closed meanwhile:
        // a stream that has ended cannot take bytes back, so node:http cannot be given them.
        finish(() => socket.destroy());
        return;
      }
      detach();
      socket.setTimeout(0);
      if (unanswered && unanswered.length > 0) socket.unshift(unanswered);
      nodeListener?.call(server, socket);
      // node:http reads from here on (its 'data' listener sees the bytes put back first).
      socket.resume();
    }

    async function run(): Promise<void> {
      busy = true;
      try {
        while (pending && !done) {
          const buf: Buffer = pending;
          pending = null;
          // Answered here only if ALL of the data read is plain requests. Otherwise node:http
          // gets all of it, as if it had read it itself: what it answers for a chunk holding an
          // error depends on the whole chunk (it drops answers not yet written when it meets
          // the error), so answering the plain front of it here would answer differently.
          const requests: SimpleRequest[] = [];
          for (let at = 0; at < buf.length; ) {
            const r = parseSimpleHead(buf, at);
            if (typeof r === 'string' || (r.close && r.end < buf.length)) return handOver(pending ? Buffer.concat([buf, pending]) : buf);
            requests.push(r);
            at = r.end;
          }
          for (const [k, r] of requests.entries()) {
            const started = options.served ? process.hrtime.bigint() : 0n;
            let file: FastAnswer | null | Promise<FastAnswer | null> = null;
            try {
              file = options.lookup(r.target);
              // A recent check answers at once: no await, no microtask.
              if (file instanceof Promise) file = await file;
            } catch {
              file = null;
            }
            if (done || socket.destroyed) return;
            if (!file) {
              const unanswered = buf.subarray(k === 0 ? 0 : (requests[k - 1] as SimpleRequest).end);
              return handOver(pending ? Buffer.concat([unanswered, pending]) : unanswered);
            }
            const requestId = options.requestId ? options.requestId(r.requestId, socket.remoteAddress) : null;
            // Draining: this answer is the connection's last, and says so.
            const last = r.close || draining;
            const answer = answerOf(file, r.method === 'GET', tailOf(last, server.keepAliveTimeout), requestId, socket);
            if (Array.isArray(answer)) {
              socket.cork();
              socket.write(answer[0], 'latin1');
              socket.write(answer[1]);
              socket.uncork();
            } else {
              socket.write(answer);
              if (socket.writableLength > 0) inFlight(answer, socket);
            }
            if (counts) {
              // All the counting an answer costs: two additions, read when metrics are scraped.
              counts.fastAnswers++;
              counts.fastBytes += Array.isArray(answer) ? answer[0].length + answer[1].length : answer.length;
            }
            if (r.method === 'GET') options.delivered?.(file, socket, r);
            options.served?.(r, started, socket, requestId);
            if (last) {
              return finish(() => {
                socket.end(() => socket.destroy());
                // A client that never reads would hold the connection, and the answer it was
                // sent, for ever: past the keep-alive timeout without progress it is dropped.
                socket.setTimeout(server.keepAliveTimeout > 0 ? server.keepAliveTimeout : LAST_ANSWER_TIMEOUT_MS, () => socket.destroy());
              });
            }
            if (socket.writableNeedDrain) {
              // Backpressure: read nothing more until the client has taken what was written.
              socket.pause();
              await new Promise<void>((resolve) => {
                const go = () => {
                  socket.removeListener('drain', go);
                  socket.removeListener('close', go);
                  resolve();
                };
                socket.on('drain', go);
                socket.on('close', go);
              });
              if (done || socket.destroyed) return;
              socket.resume();
            }
          }
        }
        if (!done) {
          // An inactivity timer: set once when the first answer is out, reset by every read and write.
          if (!answered) socket.setTimeout(server.keepAliveTimeout > 0 ? server.keepAliveTimeout + KEEP_ALIVE_TIMEOUT_BUFFER : 0);
          answered = true;
          if (ended || draining) finish(() => socket.end());
        }
      } finally {
        busy = false;
      }
    }

    // A connection that has not sent its first request yet is left to send it: it is answered,
    // then closed (see `run`); one closed now would be reset under a client's request.
    idleClosers.set(socket, () => {
      if (!busy && answered) finish(() => socket.end());
    });
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('timeout', onTimeout);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.setTimeout(server.headersTimeout);
  }

  return {
    closeAll() {
      for (const socket of held) socket.destroy();
      held.clear();
    },
    closeIdle() {
      draining = true;
      for (const close of [...idleClosers.values()]) close();
    },
  };
}
