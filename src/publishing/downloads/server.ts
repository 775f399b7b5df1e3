/**
 * The download host (`PIER_DOWNLOAD_URL`): serves uploaded files from storage, while the
 * product is hidden too (spec "States": uploading does not change the state; the platform
 * installs from here). A static file server on node:http directly: every request is a path
 * parse, one stat/open and a read, and nginx is the yardstick (bench/downloads.ts), so it
 * skips the web app's plugin pipeline.
 */
import { closeGracefullyWhenDraining, drained } from '../../infra/drain.js';
import { isDraining } from '../../infra/readiness.js';
import type { TrustProxy } from '../../infra/config.js';
import { fastPathRequestIds, REQUEST_ID_HEADER, requestIdGenerator } from '../../infra/request-id.js';
import http from 'node:http';
import type net from 'node:net';
import { listenOn } from '../../infra/listen.js';
import type { Storage, StoredReader } from '../../infra/storage.js';
import { installFastPath } from '../../infra/fast-path/fast-path.js';
import type { SimpleRequest } from '../../infra/fast-path/request-head.js';
import { countNodeHttpAnswer, hostCounts } from '../../infra/metrics/hosts.js';
import { type CachedFile, FileCache, type FileMeta } from './file-cache.js';
import { acceptsGzip, contentTypeOf, etagOf, evaluatePreconditions, rangeOf } from './http-file.js';
import { FolderPages } from './folder-pages.js';
import { folderPageOf } from './index-page.js';
import { type DownloadTarget, labelOfTarget, type ParsedPath, parseDownloadPath } from './paths.js';
import type { WithdrawnLabels } from '../notices/withdrawn.js';
import { labelReleases } from './releases.js';
import { sendRange } from './send-file.js';
import { countKeyOf } from '../stats/artifact.js';
import { countedClient } from '../stats/client.js';
import { dayOf, dayStartMs } from '../stats/days.js';
import { clientAddressResolver } from '../../infra/client-address.js';
import type { DownloadCounter } from '../stats/counter.js';
import { hasBody } from '../../infra/unread-body.js';

export interface DownloadLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  /** pino's; when `info` is off the per-request line costs nothing. */
  isLevelEnabled?(level: string): boolean;
}

export interface DownloadServer {
  server: http.Server;
  listen(port: number, host: string): Promise<{ host: string; port: number; url: string }>;
  /** Stops taking connections; downloads in flight get `drainMs` to finish (0: cut now). */
  close(drainMs?: number): Promise<void>;
}

/** Files up to this size are read in one go and sent with one write (most of an update site). */
const SMALL_FILE = 128 * 1024;
/** Memory for small files' contents (at least 256 files of the largest small size). */
const CACHE_BYTES = 32 * 1024 * 1024;
/**
 * Connections held at once, each a descriptor: past this, new ones are closed as they arrive
 * (as nginx does when its worker_connections are used up), so idle clients cannot use up the
 * process's descriptors, which the SFTP server and the database share.
 */
const MAX_CONNECTIONS = 10_000;
/** Parsed paths remembered; a path decoding to more than 1 KiB is refused and not kept, so a key is a few KiB at most. */
const MAX_TARGETS = 4096;

/** Uploaded bytes are never run as a page here (SVG, HTML uploaded as assets…). */
const COMMON_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
};

function problem(res: http.ServerResponse, status: number, code: string, detail: string, head: boolean, extra?: Record<string, string>): void {
  const requestId = res.getHeader(REQUEST_ID_HEADER);
  const body = JSON.stringify({ type: 'about:blank', title: http.STATUS_CODES[status], status, code, detail, ...extra, ...(requestId ? { requestId } : {}) });
  res.writeHead(status, {
    ...COMMON_HEADERS,
    'content-type': 'application/problem+json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(head ? undefined : body);
}

/**
 * Liveness and readiness (infra/readiness.ts) of the download host: it needs no database, so it
 * is ready unless the process drains. Both names are reserved product ids (products/slug.ts).
 */
function probe(res: http.ServerResponse, pathname: string, head: boolean): void {
  if (pathname === '/readyz' && isDraining()) {
    problem(res, 503, 'not_ready', 'the process is shutting down (draining after SIGTERM)', head);
    return;
  }
  const body = JSON.stringify({ status: pathname === '/healthz' ? 'ok' : 'ready' });
  res.writeHead(200, { ...COMMON_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(head ? undefined : body);
}

export function createDownloadServer(options: {
  storage: Storage;
  log: DownloadLog;
  cacheBytes?: number;
  /** Plain requests for cached files answered before node:http (infra/fast-path); on unless false. */
  fastPath?: boolean;
  /** Connections held at once; more are closed as they arrive (each holds a descriptor). */
  maxConnections?: number;
  /** node:http's headersTimeout (time for a request head); node:http's default unless set (tests). */
  headersTimeoutMs?: number;
  /** How long a freshness check of a cached file serves further requests (file-cache.ts FRESH_MS unless set: tests). */
  freshMs?: number;
  /** PIER_REQUEST_LOG: one info line per answered request (method, path without query, status, time, request id); on unless false. */
  logRequests?: boolean;
  /** PIER_TRUST_PROXY: whose X-Request-Id a request keeps (infra/request-id.ts); nobody's unless set. */
  trustProxy?: TrustProxy;
  /** PIER_DOWNLOAD_URL: the address a released label's composite documents name its releases by. */
  downloadUrl?: string;
  /**
   * Labels their vendor withdrew (docs/vendors.md#deprecating-and-withdrawing-a-label): everything
   * under them answers 410 Gone.
   */
  withdrawn?: Pick<WithdrawnLabels, 'of'>;
  /** Counts complete downloads of feature jars and archives (stats/counter.ts); none unless set. */
  counter?: Pick<DownloadCounter, 'add'> | null;
}): DownloadServer {
  const { storage, log } = options;
  const counter = options.counter ?? null;
  const clientOf = clientAddressResolver(options.trustProxy ?? false);
  /**
   * Counts a complete download for the client: the peer, or the address a trusted proxy names
   * (PIER_TRUST_PROXY, the web app's rule). The counter counts a file once per client and day
   * (stats/counter.ts), so neither pipelined GETs nor a new connection per download add more.
   */
  /** False when the counter could not take the download (it is dropped; a later one may count). */
  function count(peer: string | undefined, forwardedFor: string | readonly string[] | null | undefined, key: string): boolean {
    if (!counter) return false;
    const address = clientOf(peer, forwardedFor);
    return address !== undefined && counter.add(key, countedClient(address));
  }
  /** Per connection of the fast path: the last file counted on it (see `delivered` below). */
  const countedOn = new WeakMap<net.Socket, { key: string; forwardedFor: SimpleRequest['forwardedFor']; until: number }>();
  const releases = labelReleases(storage, options.downloadUrl, options.freshMs);
  const cache = new FileCache(options.cacheBytes ?? CACHE_BYTES, options.freshMs);
  /** Parsed URL paths (parsing is pure): repeated requests skip the decoding and checks. */
  const targets = new Map<string, DownloadTarget>();
  const withdrawn = options.withdrawn;

  /** The withdrawn label `t` is under and its replacement, or null: one Map lookup unless the product has withdrawn labels. */
  function withdrawnLabelOf(t: DownloadTarget): { label: string; replacement: string | null } | null {
    const labels = withdrawn?.of(t.productId);
    if (!labels) return null;
    const label = labelOfTarget(t);
    const replacement = label === null ? undefined : labels.get(label);
    return label !== null && replacement !== undefined ? { label, replacement } : null;
  }

  /**
   * 410 Gone for a withdrawn label (RFC 9110 §15.5.11: gone on purpose, likely for good), before
   * any precondition or range is looked at, so a client holding an ETag gets no 304 either. The
   * body names the replacement's update site, where the vendor named one.
   */
  function gone(res: http.ServerResponse, t: DownloadTarget, w: { label: string; replacement: string | null }, head: boolean): void {
    const base = options.downloadUrl ?? '';
    const url = w.replacement === null ? null : `${base}/${t.productId}/${w.replacement}`;
    const detail = `Label "${w.label}" of "${t.productId}" was withdrawn by its vendor.${url ? ` Use the update site ${url} (label "${w.replacement}") instead.` : ''}`;
    problem(res, 410, 'label_withdrawn', detail, head, url && w.replacement ? { replacement: w.replacement, replacementUrl: url } : undefined);
  }

  /** The request-target without its query (which nothing here reads). */
  const pathOf = (url: string) => {
    const q = url.indexOf('?');
    return q >= 0 ? url.slice(0, q) : url;
  };

  function targetOf(pathname: string): ParsedPath {
    const known = targets.get(pathname);
    if (known) return { ok: true, target: known };
    const parsed = parseDownloadPath(pathname);
    if (parsed.ok) {
      if (targets.size >= MAX_TARGETS) targets.delete(targets.keys().next().value as string);
      targets.set(pathname, parsed.target);
    }
    return parsed;
  }

  /**
   * For the fast path: the cached file a request-target names when the plain answer is the
   * cached bytes, exactly as `handle` decides it (a file, not a folder; in memory; the same
   * storage version). Anything else is null and handle() answers it.
   */
  function currentCachedFile(url: string): CachedFile | null | Promise<CachedFile | null> {
    const parsed = targetOf(pathOf(url));
    if (!parsed.ok || parsed.target.slash) return null;
    // A withdrawn label's files stay cached: handle() answers 410 for them.
    if (withdrawnLabelOf(parsed.target)) return null;
    const answer = releases.resolve(parsed.target);
    if (answer instanceof Promise || !('key' in answer)) return null;
    return cache.current(answer.key, storedVersion, storage.changes());
  }

  const storedVersion = async (key: string) => (await storage.stat(key))?.version ?? null;

  /** Index pages of update-site folders, cached by each folder's version (folder-pages.ts). */
  const folderPages = new FolderPages(storage);

  async function serveFolder(req: http.IncomingMessage, res: http.ServerResponse, t: DownloadTarget, url: string, version: string | undefined, head: boolean) {
    const pathname = pathOf(url);
    // Update-site folders have an index (a label folder and below: `<product>/update-site/<label>…`),
    // and the example workflows' folders (`/workflows/<product>/…`, which product pages link).
    if (t.area !== 'update-site' && t.area !== 'workflows') return problem(res, 404, 'not_found', 'No such file', head);
    if (!t.slash) {
      res.writeHead(301, { location: `${pathname}/`, 'content-length': 0 });
      return res.end();
    }
    const page = folderPageOf(url.slice(pathname.length + 1));
    if (page === null) return problem(res, 404, 'not_found', 'No such page of this folder', head);
    const index = await folderPages.page(t.key, version, decodeURIComponent(pathname), page);
    if (index.kind === 'missing') return problem(res, 404, 'not_found', 'No such file', head);
    if (index.kind === 'beyond') return problem(res, 404, 'not_found', `No such page of this folder (it has ${index.pages})`, head);
    // The same bytes gzipped (built once per page) for a client that takes them; a strong ETag
    // per content coding (RFC 9110 §8.8.3.3).
    const gzip = acceptsGzip(req.headers['accept-encoding']);
    const etag = gzip ? `${index.etag.slice(0, -1)}-gz"` : index.etag;
    const headers: http.OutgoingHttpHeaders = { ...COMMON_HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', etag, vary: 'accept-encoding' };
    const ifNoneMatch = req.headers['if-none-match'];
    if (ifNoneMatch !== undefined && evaluatePreconditions({ ifNoneMatch }, etag, Number.NaN, Date.now()) === 'not-modified') {
      res.writeHead(304, headers);
      return res.end();
    }
    const body = gzip ? index.gzipped : index.body;
    res.writeHead(200, { ...headers, ...(gzip ? { 'content-encoding': 'gzip' } : {}), 'content-length': body.length });
    res.end(head ? undefined : body);
  }

  /** What every answer about one file carries, built once per version of a cached file. */
  function describeFile(t: DownloadTarget, stored: { size: number; mtimeMs: number; changedMs: number; version: string }): FileMeta {
    const { size, version } = stored;
    // When the bytes at this URL last changed: the later of the file's own time and when it was
    // put in place. An upload that keeps its times (`put -p`, lftp mirror) may carry a time
    // older than the file it replaces (a rebuilt or rolled-back release); a client comparing
    // dates would then keep its old copy.
    const lastModifiedMs = Math.max(stored.mtimeMs, stored.changedMs);
    const etag = etagOf(size, lastModifiedMs, version);
    const lastModified = new Date(lastModifiedMs).toUTCString();
    const headers: http.OutgoingHttpHeaders = {
      ...COMMON_HEADERS,
      'content-type': contentTypeOf(t.key),
      etag,
      'last-modified': lastModified,
      'accept-ranges': 'bytes',
      // Files may be replaced by the next upload at any time: always revalidate (cheap 304s).
      'cache-control': 'public, no-cache',
    };
    if (t.area === 'assets') headers['access-control-allow-origin'] = '*';
    return { size, lastModifiedMs, etag, lastModified, headers, full: { ...headers, 'content-length': size }, countKey: counter ? countKeyOf(t.key) : null };
  }

  /** Answers for one file whose bytes are either in `data` (small files) or behind `reader`. */
  function serveFile(req: http.IncomingMessage, res: http.ServerResponse, meta: FileMeta, data: Buffer | null, reader: StoredReader | null, head: boolean) {
    const { size, etag } = meta;
    const h = req.headers;
    const conditional = h['if-none-match'] !== undefined || h['if-modified-since'] !== undefined || h['if-match'] !== undefined || h['if-unmodified-since'] !== undefined;
    const rangeHeader = h.range;
    if (!conditional && rangeHeader === undefined && (data || head || size === 0)) {
      // The common case (a p2 client fetching a file): headers built once per file version.
      void reader?.close();
      res.writeHead(200, meta.full);
      // A GET whose whole body is handed over now counts (README "Download counts"); HEAD never.
      if (meta.countKey && !head && data) count(req.socket.remoteAddress, req.headers['x-forwarded-for'], meta.countKey);
      return void res.end(head || !data ? undefined : data);
    }
    const precondition = conditional
      ? evaluatePreconditions(
          { ifMatch: h['if-match'], ifUnmodifiedSince: h['if-unmodified-since'], ifNoneMatch: h['if-none-match'], ifModifiedSince: h['if-modified-since'] },
          etag,
          meta.lastModifiedMs,
          Date.now(),
        )
      : 'proceed';
    if (precondition === 'failed') {
      void reader?.close();
      return problem(res, 412, 'precondition_failed', 'The file is not the version the request names (If-Match / If-Unmodified-Since)', head);
    }
    if (precondition === 'not-modified') {
      void reader?.close();
      res.writeHead(304, meta.headers);
      return void res.end();
    }
    const range = rangeOf(rangeHeader, req.headers['if-range'] as string | undefined, size, etag);
    if (range.kind === 'unsatisfiable') {
      void reader?.close();
      res.writeHead(416, { ...meta.headers, 'content-range': `bytes */${size}`, 'content-length': 0 });
      return void res.end();
    }
    const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, size - 1];
    const headers: http.OutgoingHttpHeaders = { ...meta.headers, 'content-length': size === 0 ? 0 : end - start + 1 };
    if (range.kind === 'partial') headers['content-range'] = `bytes ${start}-${end}/${size}`;
    const status = range.kind === 'partial' ? 206 : 200;
    // Only a 200 with the whole body counts: never a 206 (a part), a 304 or HEAD.
    const countKey = status === 200 && !head ? (meta.countKey ?? null) : null;
    if (head || size === 0 || data) {
      void reader?.close();
      res.writeHead(status, headers);
      if (countKey !== null && data) count(req.socket.remoteAddress, req.headers['x-forwarded-for'], countKey);
      return void res.end(head || !data ? undefined : range.kind === 'partial' ? data.subarray(start, end + 1) : data);
    }
    res.writeHead(status, headers);
    // The strong ETag names this content (size, time, storage version): sendRange's warm-file key.
    // A large file counts once its last byte is written: a download cut off before does not.
    const sending = sendRange(res, reader as StoredReader, etag, start, end);
    if (countKey !== null && counter) {
      // Read now: a socket that has closed by the time the last byte is out no longer says its peer.
      const peer = req.socket.remoteAddress;
      void sending.then((complete) => complete && count(peer, req.headers['x-forwarded-for'], countKey));
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown> {
    const head = req.method === 'HEAD';
    if (req.method === 'OPTIONS') {
      // CORS preflight: assets are open to every origin (product pages elsewhere embed them).
      res.writeHead(204, {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET, HEAD',
        'access-control-allow-headers': 'range, if-range, if-match, if-unmodified-since, if-none-match, if-modified-since',
        'access-control-max-age': '86400',
      });
      res.end();
      return;
    }
    if (req.method !== 'GET' && !head) {
      res.setHeader('allow', 'GET, HEAD, OPTIONS');
      return problem(res, 405, 'method_not_allowed', 'The download host only answers GET and HEAD', false);
    }
    const pathname = pathOf(req.url ?? '/');
    if (pathname === '/healthz' || pathname === '/readyz') return probe(res, pathname, head);
    const parsed = targetOf(pathname);
    if (!parsed.ok) return problem(res, parsed.status, parsed.status === 400 ? 'invalid_path' : 'not_found', parsed.reason, head);
    const asked = parsed.target;
    const withdrawnLabel = withdrawnLabelOf(asked);
    if (withdrawnLabel) return gone(res, asked, withdrawnLabel, head);
    const resolved = releases.resolve(asked);
    const answer = resolved instanceof Promise ? await resolved : resolved;
    // A label with no release serves nothing, whatever its upload folder holds (downloads/releases.ts).
    if ('none' in answer) return problem(res, 404, 'not_found', 'No such file', head);
    if ('generated' in answer) {
      const g = answer.generated;
      return serveFile(req, res, describeFile(asked, { size: g.data.length, mtimeMs: g.modifiedMs, changedMs: g.modifiedMs, version: g.version }), g.data, null, head);
    }
    const t = answer.key === asked.key ? asked : { ...asked, key: answer.key };
    if (await serveStored(req, res, t, pathname, head)) return;
    // A file the label's current release lacks may be in an earlier one: a client that read the
    // previous release's metadata a moment before the label moved still gets its jars.
    for (const key of await releases.earlier(asked)) if (await serveStored(req, res, { ...asked, key }, pathname, head, false)) return;
    return problem(res, 404, 'not_found', 'No such file', head);
  }

  /** Answers the file or folder at `t.key`; false when there is none (nothing was sent). */
  async function serveStored(req: http.IncomingMessage, res: http.ServerResponse, t: DownloadTarget, pathname: string, head: boolean, folders = true): Promise<boolean> {
    const cached = t.slash ? null : await cache.current(t.key, storedVersion, storage.changes());
    if (cached) {
      serveFile(req, res, cached, cached.data, null, head);
      return true;
    }
    const small = await storage.readSmall(t.key, SMALL_FILE);
    if (small) {
      if (t.slash) problem(res, 404, 'not_found', 'No such folder', head);
      else if (small.data) {
        const file = { ...describeFile(t, small), version: small.version, data: small.data, checkedAt: Number.NEGATIVE_INFINITY, checkedChanges: -1 };
        cache.set(t.key, file);
        serveFile(req, res, file, small.data, null, head);
      } else if (head) serveFile(req, res, describeFile(t, small), null, null, head);
      else {
        const reader = await storage.openRead(t.key);
        if (!reader) return false;
        serveFile(req, res, describeFile(t, reader), null, reader, head);
      }
      return true;
    }
    if (!folders) return false;
    const st = await storage.stat(t.key);
    if (st?.type !== 'dir') return false;
    await serveFolder(req, res, t, req.url ?? pathname, st.version, head);
    return true;
  }

  const logRequests = options.logRequests !== false && (log.isLevelEnabled?.('info') ?? true);
  // Null while metrics are off: then no answer does any counting.
  const counts = hostCounts('downloads', { countsNodeHttp: true });
  const headersTimeout = options.headersTimeoutMs === undefined ? {} : { headersTimeout: options.headersTimeoutMs, connectionsCheckingInterval: Math.max(10, Math.floor(options.headersTimeoutMs / 5)) };
  const requestIdOf = requestIdGenerator(options.trustProxy ?? false);
  const server = http.createServer({ keepAliveTimeout: 65_000, noDelay: true, ...headersTimeout }, (req, res) => {
    if (counts) countNodeHttpAnswer(counts, req, res);
    const started = logRequests ? process.hrtime.bigint() : 0n;
    const reqId = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, reqId);
    // The host reads no request body: a request with one ends its connection after the answer,
    // or node:http would read and discard the body for as long as the client sends it
    // (infra/unread-body.ts).
    if (hasBody(req)) res.setHeader('connection', 'close');
    if (logRequests) {
      res.on('finish', () =>
        log.info(
          { reqId, method: req.method, path: req.url?.split('?')[0], status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 },
          'request',
        ),
      );
    }
    handle(req, res).catch((e: unknown) => {
      log.error({ reqId, url: req.url, err: e }, 'download failed');
      if (!res.headersSent) problem(res, 500, 'internal', 'Internal error', req.method === 'HEAD');
      else res.destroy();
    });
  });

  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  closeGracefullyWhenDraining(server);

  const fast =
    options.fastPath === false
      ? null
      : installFastPath(server, {
          lookup: currentCachedFile,
          counts,
          delivered: counter
            ? (file, socket, request) => {
                const key = (file as CachedFile).countKey;
                if (!key) return;
                // The counter counts a file once per client and day: the same file asked for
                // again on the same connection, for the same forwarded client, the same day,
                // adds nothing there, so it is not even looked up.
                const last = countedOn.get(socket);
                const at = Date.now();
                if (last && last.key === key && last.forwardedFor === request.forwardedFor && at < last.until) return;
                if (count(socket.remoteAddress, request.forwardedFor, key)) countedOn.set(socket, { key, forwardedFor: request.forwardedFor, until: dayStartMs(dayOf(at) + 1) });
              }
            : undefined,
          requestId: fastPathRequestIds(options.trustProxy ?? false),
          served: logRequests
            ? (r, started, _socket, reqId) =>
                log.info(
                  { reqId, method: r.method, path: pathOf(r.target), status: 200, ms: Number(process.hrtime.bigint() - started) / 1e6, fast: true },
                  'request',
                )
            : undefined,
        });
  if (options.fastPath !== false && !fast) log.error({}, 'download host: this Node.js version does not allow the fast path; every request goes through node:http');

  return {
    server,
    async listen(port, host) {
      const a = await listenOn(server, port, host);
      const h = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      return { host: a.address, port: a.port, url: `http://${h}:${a.port}` };
    },
    close(drainMs = 0) {
      const force = () => {
        server.closeAllConnections();
        fast?.closeAll();
      };
      return drained(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            // Kept-alive connections between requests close now; one answering closes after it
            // (node:http sends its answers `Connection: close` once the server is closing).
            server.closeIdleConnections();
            fast?.closeIdle();
            const idle = setInterval(() => server.closeIdleConnections(), 100);
            server.once('close', () => clearInterval(idle));
          }),
        drainMs,
        force,
      );
    },
  };
}
