/**
 * The live log of a run: GET /api/runs/{id}/logs/stream is Server-Sent Events, but EventSource
 * cannot send `Authorization`, so the stream is read with fetch and parsed here. Reconnects with
 * backoff and resumes with `Last-Event-ID` (the `attempt.seq` of the last chunk seen); chunks at
 * or before that position are dropped, so a resumed stream never doubles a line.
 */
import { ApiError, openStream } from './api.js';
import type { LogChunk, RunStatus } from './types.js';

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

/**
 * An incremental parser of the event stream format
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
 * lines end in CRLF, LF or CR (also split across pieces), `:` starts a comment, a blank line
 * dispatches the event (none when it has no data), `retry` is ignored (backoff is ours).
 */
export class SseParser {
  #buf = '';
  #skipLf = false;
  #event = '';
  #data: string[] = [];
  #id: string | null = null;
  #lastId: string | null = null;

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let s = text;
    if (this.#skipLf && s.startsWith('\n')) s = s.slice(1);
    this.#skipLf = false;
    this.#buf += s;
    let start = 0;
    for (let i = 0; i < this.#buf.length; i++) {
      const c = this.#buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.#line(this.#buf.slice(start, i), out);
      if (c === 13) {
        if (i + 1 === this.#buf.length) this.#skipLf = true;
        else if (this.#buf.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.#buf = this.#buf.slice(start);
    return out;
  }

  #line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.#id !== null) this.#lastId = this.#id;
      this.#id = null;
      if (this.#data.length > 0) out.push({ event: this.#event || 'message', data: this.#data.join('\n'), id: this.#lastId });
      this.#event = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
  }
}

/** `a.s` positions in stream order: attempt, then sequence. */
export function comparePosition(a: { attempt: number; seq: number }, b: { attempt: number; seq: number }): number {
  return a.attempt - b.attempt || a.seq - b.seq;
}

export interface FollowHandlers {
  chunks(chunks: LogChunk[]): void;
  /** The run ended (its final status); the stream is closed. */
  end(status: RunStatus | 'deleted'): void;
  /** Access was refused (a 4xx, or an `error` event): no more reconnects. */
  failed(error: ApiError): void;
  /** Connected (true) or waiting to reconnect (false). */
  connection?(live: boolean): void;
}

const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000, 30000];

/** Follows a run's log until it ends, the caller aborts, or access is refused. */
export async function followLog(runId: string, on: FollowHandlers, signal: AbortSignal): Promise<void> {
  let last: { attempt: number; seq: number } = { attempt: 1, seq: 0 };
  let failures = 0;
  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
  while (!signal.aborted) {
    let ended = false;
    try {
      const headers: Record<string, string> = last.seq > 0 || last.attempt > 1 ? { 'last-event-id': `${last.attempt}.${last.seq}` } : {};
      const res = await openStream(`/api/runs/${encodeURIComponent(runId)}/logs/stream`, headers, signal);
      on.connection?.(true);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SseParser();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const batch: LogChunk[] = [];
        for (const e of parser.push(value)) {
          if (e.event === 'log') {
            const chunk = JSON.parse(e.data) as LogChunk;
            if (comparePosition(chunk, last) <= 0) continue;
            last = { attempt: chunk.attempt, seq: chunk.seq };
            batch.push(chunk);
            failures = 0;
          } else if (e.event === 'end') {
            ended = true;
            if (batch.length) on.chunks(batch.splice(0));
            on.end((JSON.parse(e.data) as { status: RunStatus | 'deleted' }).status);
          } else if (e.event === 'error') {
            const p = JSON.parse(e.data) as { status: number; code?: string; detail?: string };
            if (batch.length) on.chunks(batch.splice(0));
            on.failed(new ApiError({ status: p.status, code: p.code, detail: p.detail }));
            return;
          }
        }
        if (batch.length) on.chunks(batch);
        if (ended) return;
      }
    } catch (e) {
      if (signal.aborted || (e as Error).name === 'AbortError') return;
      if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429) {
        on.failed(e);
        return;
      }
    }
    // The connection dropped before `end`: wait, then resume after the last chunk seen.
    on.connection?.(false);
    await sleep(BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)]!);
  }
}
