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
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new FetchProblem(url, `unsupported URL scheme ${u.protocol}`);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let res: Response;
  try {
    res = await fetch(u, { signal, redirect: 'follow', headers: { 'user-agent': 'pier-crawler' } });
  } catch (e) {
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
export async function exists(url: string, limits: FetchLimits): Promise<boolean> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const res = await fetch(url, { method: 'HEAD', signal, redirect: 'follow' });
    return res.ok;
  } catch (e) {
    throw new FetchProblem(url, signal.aborted ? `no answer within ${limits.timeoutMs} ms` : `unreachable: ${causeOf(e)}`);
  }
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (e as Error).message;
}
