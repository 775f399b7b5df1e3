/**
 * The one way the vendor's `pier` (`pier publish`, `pier ci`) reads an HTTP answer: up to a
 * limit per call, then it stops reading and says so. A wrong `--server`, a proxy's error page or
 * a hostile server could otherwise send an answer of any size, all of it held in memory (and
 * parsed) before anything looks at it.
 */

const MiB = 1024 * 1024;

/** The most each answer may hold; each is many times what a real answer of the service needs. */
export const ANSWER_LIMITS = {
  /** `GET /api/publishing`: addresses, host keys, the trusted-publishing audience (about 1 KiB). */
  info: 1 * MiB,
  /** A credential: the trusted-publishing exchange, the CI's ID token (a few KiB). */
  credential: 64 * 1024,
  /** A PATCH answer: the page fields (a body is at most 2 MiB) and their warnings. */
  page: 8 * MiB,
  /** A label's file list: path, size and SHA-256 of each file (about 200 bytes a file). */
  manifest: 64 * MiB,
  /** A release answer with its crawl report. */
  release: 16 * MiB,
} as const;

/** An answer larger than the limit of its call: nothing of it is used. */
export class AnswerTooLargeError extends Error {
  constructor(
    readonly what: string,
    readonly limitBytes: number,
  ) {
    super(`${what}: the answer is larger than ${sizeText(limitBytes)}; stopped reading it (is the server a Pier service?)`);
    this.name = 'AnswerTooLargeError';
  }
}

function sizeText(bytes: number): string {
  return bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / 1024} KiB`;
}

/**
 * The body of `res` as text, at most `limitBytes` of it: a `Content-Length` over the limit is
 * refused before reading, and a body that grows past it (chunked, or lying about its length)
 * is cancelled as soon as it does, so no more than the limit (plus one network chunk) is held.
 */
export async function readAnswer(res: Response, what: string, limitBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) {
    await res.body?.cancel().catch(() => {});
    throw new AnswerTooLargeError(what, limitBytes);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > limitBytes) {
      await reader.cancel().catch(() => {});
      throw new AnswerTooLargeError(what, limitBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, bytes).toString('utf8');
}

/** `readAnswer`, parsed as JSON; null when it is empty or not JSON (a proxy's error page). */
export async function readJsonAnswer(res: Response, what: string, limitBytes: number): Promise<unknown> {
  const text = await readAnswer(res, what, limitBytes);
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null;
  }
}
