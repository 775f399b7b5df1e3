/**
 * Reads repository files over HTTP as a P2 client does (what is indexed is what users get).
 * Every request has a deadline and a byte cap, so a slow, endless or unreachable server becomes
 * a reported problem, never a hang or unbounded memory.
 */
export interface FetchLimits {
  /** Deadline for one request, headers and body. */
  timeoutMs: number;
  /** Largest body read into memory. */
  maxBytes: number;
  /**
   * The only origin a crawl may fetch from (the download host serving the label). Composite
   * children, artifact mapping rules and redirects come from vendor files: without this a
   * vendor could make the server fetch internal hosts and read the outcome in the crawl report.
   */
  origin?: string;
  /**
   * The URL prefix every fetch must stay under (`<download host>/<product>/`): the download
   * host serves every product's files, so the origin alone would let one vendor's composite
   * children, mapping rules or redirects read another product's files as its own.
   */
  scope?: string;
  /** Requests this crawl may still make; a repository that keeps asking for more is cut off. */
  budget?: { left: number };
}

const MAX_REDIRECTS = 5;

/** Refuses a URL outside the crawl's origin and spends one request of its budget. */
function admit(url: URL, limits: FetchLimits): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchProblem(url.href, `unsupported URL scheme ${url.protocol}`);
  if (limits.origin !== undefined && url.origin !== limits.origin) {
    throw new FetchProblem(url.href, `not fetched: outside the download host ${limits.origin}`);
  }
  if (limits.scope !== undefined && !withinScope(url.href, limits.scope)) {
    throw new FetchProblem(url.href, `not fetched: outside the product's folder ${limits.scope}`);
  }
  if (limits.budget) {
    if (limits.budget.left <= 0) throw new FetchProblem(url.href, 'not fetched: the crawl made too many requests');
    limits.budget.left -= 1;
  }
}

/**
 * Whether `href` lies under the folder `scope` (ending in `/`). URL parsing has already removed
 * `.` and `..` segments (also percent-encoded ones, WHATWG URL); an encoded slash or backslash
 * could still turn into a separator on the server, so it never counts as inside.
 */
export function withinScope(href: string, scope: string): boolean {
  return href.startsWith(scope) && !/%2f|%5c/i.test(href.slice(scope.length));
}

/** fetch() that follows redirects itself, only within the crawl's origin. */
async function fetchAdmitted(url: URL, limits: FetchLimits, init: { method: 'GET' | 'HEAD'; signal: AbortSignal }): Promise<Response> {
  let target = url;
  for (let hop = 0; ; hop++) {
    admit(target, limits);
    const res = await fetch(target, { ...init, redirect: 'manual', headers: { 'user-agent': 'pier-crawler' } });
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || location === null) return res;
    await res.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new FetchProblem(url.href, `more than ${MAX_REDIRECTS} redirects`);
    target = new URL(location, target);
  }
}

export class FetchProblem extends Error {
  constructor(
    readonly url: string,
    message: string,
  ) {
    super(message);
    this.name = 'FetchProblem';
  }
}

/** The body of `url`, or null on 404/410; throws FetchProblem on anything else. */
export async function fetchBytes(url: string, limits: FetchLimits, maxBytes = limits.maxBytes): Promise<Buffer | null> {
  const u = new URL(url);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let res: Response;
  try {
    res = await fetchAdmitted(u, limits, { method: 'GET', signal });
  } catch (e) {
    if (e instanceof FetchProblem) throw e;
    throw new FetchProblem(url, signal.aborted ? `no answer within ${limits.timeoutMs} ms` : `unreachable: ${causeOf(e)}`);
  }
  if (res.status === 404 || res.status === 410) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new FetchProblem(url, `HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? '-1');
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new FetchProblem(url, `${declared} bytes is over the limit of ${maxBytes}`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body ?? []) {
      total += chunk.length;
      if (total > maxBytes) {
        await res.body?.cancel().catch(() => {});
        throw new FetchProblem(url, `more than ${maxBytes} bytes`);
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (e) {
    if (e instanceof FetchProblem) throw e;
    throw new FetchProblem(url, signal.aborted ? `body not complete within ${limits.timeoutMs} ms` : `read failed: ${causeOf(e)}`);
  }
  return Buffer.concat(chunks, total);
}

/** Whether `url` exists (HEAD), for artifacts whose bytes the crawl does not need. */
/** The size a HEAD request announces: null when there is no such file, -1 when no size is given. */
export async function remoteSize(url: string, limits: FetchLimits): Promise<number | null> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const res = await fetchAdmitted(new URL(url), limits, { method: 'HEAD', signal });
    if (!res.ok) return null;
    const length = res.headers.get('content-length');
    return length !== null && /^\d{1,15}$/.test(length) ? Number(length) : -1;
  } catch (e) {
    if (e instanceof FetchProblem) throw e;
    throw new FetchProblem(url, signal.aborted ? `no answer within ${limits.timeoutMs} ms` : `unreachable: ${causeOf(e)}`);
  }
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}
