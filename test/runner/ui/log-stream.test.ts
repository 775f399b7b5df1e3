import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FilteredView, LogLines } from '../../../src/runner/web/ui/log-lines.js';
import { comparePosition, followLog, type SseEvent, SseParser } from '../../../src/runner/web/ui/log-stream.js';

const lineText = fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => s.replace(/[\r\n]/g, ''));
const ending = fc.constantFrom('\n', '\r\n', '\r');
const event = fc.record({
  event: fc.constantFrom('log', 'end', 'error', ''),
  data: fc.array(lineText, { minLength: 1, maxLength: 4 }),
  id: fc.option(lineText.map((s) => s.replace(/\0/g, '')), { nil: null }),
  comment: fc.option(lineText, { nil: null }),
});

/** Cuts `text` at the given points (as a network would). */
function cut(text: string, points: number[]): string[] {
  const at = [...new Set(points.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const p of at) {
    pieces.push(text.slice(from, p));
    from = p;
  }
  pieces.push(text.slice(from));
  return pieces;
}

describe('the Server-Sent Events parser of the live log', () => {
  // One kind of line end per stream: CR then an empty line ended by LF would read as one CRLF.
  test('any stream, in any pieces, with any kind of line end, gives the events that were written', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 8 }), ending, fc.array(fc.nat(), { maxLength: 12 }), (events, end, points) => {
        const eol = () => end;
        let text = '';
        const expected: SseEvent[] = [];
        let lastId: string | null = null;
        for (const e of events) {
          if (e.comment !== null) text += `:${e.comment}${eol()}`;
          if (e.event) text += `event: ${e.event}${eol()}`;
          for (const d of e.data) text += `data: ${d}${eol()}`;
          if (e.id !== null) {
            text += `id: ${e.id}${eol()}`;
            lastId = e.id;
          }
          text += eol();
          expected.push({ event: e.event || 'message', data: e.data.join('\n'), id: lastId });
        }
        const parser = new SseParser();
        const got = cut(text, points).flatMap((piece) => parser.push(piece));
        assert.deepEqual(got, expected);
      }),
      { numRuns: 500 },
    );
  });

  test('the server\'s own format: a log event, a keep-alive comment, the end', () => {
    const p = new SseParser();
    const chunk = { seq: 1, attempt: 2, text: 'a\nb', createdAt: '2030-01-01T00:00:00.000Z' };
    const got = [...p.push(`id: 2.1\nevent: log\ndata: ${JSON.stringify(chunk)}\n\n: keep-alive\n\nevent: e`), ...p.push('nd\ndata: {"status":"failed"}\n\n')];
    assert.deepEqual(got, [
      { event: 'log', data: JSON.stringify(chunk), id: '2.1' },
      { event: 'end', data: '{"status":"failed"}', id: '2.1' },
    ]);
    assert.ok(comparePosition({ attempt: 2, seq: 1 }, { attempt: 1, seq: 900 }) > 0);
    assert.ok(comparePosition({ attempt: 1, seq: 3 }, { attempt: 1, seq: 3 }) === 0);
  });
});

describe('log lines from chunks cut anywhere', () => {
  const logText = fc
    .tuple(fc.array(fc.oneof(lineText, fc.constantFrom('ERROR x', 'fatal: y', 'ok')), { maxLength: 30 }), fc.constantFrom('\n', '\r\n'))
    .map(([ls, eol]) => ls.join(eol));
  test('the lines are those of the text, however it was cut into chunks and attempts', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(logText, fc.array(fc.nat(), { maxLength: 6 })), { minLength: 1, maxLength: 3 }), (attempts) => {
        const lines = new LogLines();
        const expected: [number, string][] = [];
        attempts.forEach(([text, points], a) => {
          const pieces = cut(text, points);
          lines.append(pieces.map((t, i) => ({ attempt: a + 1, seq: i + 1, text: t, createdAt: '' })));
          const own = text.split(/\r\n|\n/);
          if (own[own.length - 1] === '') own.pop();
          for (const l of own) expected.push([a + 1, l]);
        });
        assert.deepEqual(
          lines.text.map((t, i) => [lines.attempt[i], t]),
          expected,
        );
      }),
      { numRuns: 300 },
    );
  });

  test('the filtered view kept up to date as chunks arrive equals one built at the end', () => {
    fc.assert(
      fc.property(logText, fc.array(fc.nat(), { maxLength: 8 }), fc.constantFrom('', 'o', 'err'), fc.boolean(), (text, points, query, errorsOnly) => {
        const lines = new LogLines();
        const live = new FilteredView();
        const f = { attempt: null, query, errorsOnly };
        cut(text, points).forEach((t, i) => {
          lines.append([{ attempt: 1, seq: i + 1, text: t, createdAt: '' }]);
          live.update(lines, f);
        });
        assert.deepEqual(live.update(lines, f), new FilteredView().update(lines, f));
      }),
      { numRuns: 300 },
    );
  });
});

describe('following a log across dropped connections', () => {
  test('reconnects with Last-Event-ID after a drop and never doubles a chunk', async () => {
    const seen: (string | undefined)[] = [];
    const event = (attempt: number, seq: number) => `id: ${attempt}.${seq}\nevent: log\ndata: ${JSON.stringify({ attempt, seq, text: `line ${attempt}.${seq}\n`, createdAt: '' })}\n\n`;
    const server = http.createServer((req, res) => {
      seen.push(req.headers['last-event-id'] as string | undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (seen.length === 1) {
        // Two chunks, half of a third, then the connection drops.
        res.write(event(1, 1) + event(1, 2) + event(2, 1).slice(0, 20));
        setTimeout(() => res.destroy(), 50);
      } else {
        // The server sends one chunk again (it may): the client drops it.
        res.end(`${event(1, 2)}${event(2, 1)}: keep-alive\n\n${event(2, 2)}event: end\ndata: {"status":"failed"}\n\n`);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const realFetch = globalThis.fetch;
    globalThis.fetch = ((url: string, init?: RequestInit) => realFetch(base + url, init)) as typeof fetch;
    try {
      const got: string[] = [];
      const states: boolean[] = [];
      let ended: string | null = null;
      await followLog(
        'r1',
        {
          chunks: (cs) => got.push(...cs.map((c) => `${c.attempt}.${c.seq}`)),
          end: (s) => {
            ended = s;
          },
          failed: (e) => assert.fail(e.message),
          connection: (live) => states.push(live),
        },
        new AbortController().signal,
      );
      assert.deepEqual(got, ['1.1', '1.2', '2.1', '2.2']);
      assert.equal(ended, 'failed');
      assert.deepEqual(seen, [undefined, '1.2']);
      assert.deepEqual(states, [true, false, true]);
    } finally {
      globalThis.fetch = realFetch;
      server.close();
    }
  });
});
