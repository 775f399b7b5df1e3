import { readLogText } from '../../src/runner/runs/log-reading.js';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CLIPPED, clipStart, ERROR_LINE, type ExcerptLimits, TailCollector } from '../../src/runner/runs/log-excerpt.js';

/*
 * TailCollector and clipStart against a reference model. The log is the concatenation of its
 * chunks; its lines are `text.split('\n')` without the empty string after a final newline (an
 * empty text has no lines). Chunks are cut at code-point boundaries (executors send well-formed
 * text) and fed newest first, as RunsService.readBack does: either every chunk, or stopping as
 * soon as the collector is full (readBack's early return), then `finish()`.
 */

const utf8 = (s: string) => Buffer.byteLength(s);
const keepErrors = (l: string) => ERROR_LINE.test(l);

/** The reference model: the lines of a text. */
function modelLines(text: string): string[] {
  if (text === '') return [];
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

/** The text cut into non-empty chunks of `sizes` code points (cycling), oldest first. */
function chunksOf(text: string, sizes: number[]): string[] {
  const cps = Array.from(text);
  const out: string[] = [];
  for (let at = 0, k = 0; at < cps.length; k++) {
    const n = sizes[k % sizes.length]!;
    out.push(cps.slice(at, at + n).join(''));
    at += n;
  }
  return out;
}

/** Feeds an attempt's chunks newest first; `stopWhenFull` stops as readBack does. */
function feed(tail: TailCollector, chunks: string[], stopWhenFull: boolean): void {
  for (let i = chunks.length - 1; i >= 0; i--) {
    if (stopWhenFull && tail.full) return;
    tail.prepend(chunks[i]!);
  }
}

function collect(chunks: string[], limits: ExcerptLimits, stopWhenFull: boolean) {
  const tail = new TailCollector(limits);
  feed(tail, chunks, stopWhenFull);
  tail.finish();
  return { lines: tail.lines(), bytes: tail.bytes, skipped: tail.skipped, full: tail.full };
}

/** Log lines as workflow engines, JVMs and shells write them, multi-byte text, and very long lines. */
const line: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      '',
      'ERROR: disk full',
      'java.lang.IllegalStateException: boom',
      'Exception in thread "main"',
      '  at org.knime.core.Node.execute(Node.java:42)',
      'Traceback (most recent call last):',
      'FATAL killed by signal 9',
      'WARN 0 errors',
      'erroneous but not an error word',
      'Errors: none',
      'permission denied',
      'INFO all good',
      '😀 ERROR 😀',
      'Fehler: ä ö ü — ERROR',
      '中文日志 failed',
      '…starts with the marker',
      '\r',
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('', 'ERROR ', 'Exception: '), fc.constantFrom('a', 'é', '€', '😀', '中', 'ERROR ', 'x😀'), fc.integer({ min: 40, max: 700 }), fc.constantFrom('', ' ERROR', ' done'))
      .map(([start, c, n, end]) => start + c.repeat(n) + end),
  },
);

/** A log text: lines joined by newlines, with or without a final newline (sometimes only newlines). */
const logText: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.array(line, { maxLength: 25 }), fc.boolean()).map(([ls, nl]) => ls.join('\n') + (nl && ls.length ? '\n' : '')) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 5 }).map((n) => '\n'.repeat(n)) },
);

const sizes = fc.array(fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 400 })), { minLength: 1, maxLength: 12 });
const lineLimit = fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 60 }));
/** A byte budget that leaves room for the clip marker and at least one byte. */
const byteBudget = fc.oneof(fc.integer({ min: utf8(CLIPPED) + 1, max: 40 }), fc.integer({ min: 4, max: 600 }), fc.integer({ min: 4, max: 20_000 }));

/** Whether `got` is the end of `expected`, its oldest (first) line possibly clipped; whether it was. */
function assertTailOf(expected: string[], got: string[], what: string): { clipped: boolean } {
  assert.ok(got.length <= expected.length, `${what}: more lines than the log has: ${JSON.stringify(got)} vs ${JSON.stringify(expected)}`);
  const off = expected.length - got.length;
  for (let j = 1; j < got.length; j++) {
    assert.equal(got[j], expected[off + j], `${what}: line ${j} of ${JSON.stringify(got)} is not the log's (${JSON.stringify(expected.slice(off))})`);
  }
  if (got.length === 0 || got[0] === expected[off]) return { clipped: false };
  const first = got[0]!;
  assert.ok(first.startsWith(CLIPPED), `${what}: the oldest line ${JSON.stringify(first)} differs from ${JSON.stringify(expected[off])} without the clip marker`);
  assert.ok(expected[off]!.endsWith(first.slice(CLIPPED.length)), `${what}: ${JSON.stringify(first)} is not the end of ${JSON.stringify(expected[off])}`);
  return { clipped: true };
}

const RUNS = 300;

describe('TailCollector against the model of a log', () => {
  test('without a filter and with room for everything, lines() is exactly the last N lines', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, fc.boolean(), (text, cut, n, stop) => {
        const model = modelLines(text);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: utf8(text) + 1 }, stop);
        const want = model.slice(-n);
        assert.deepEqual(got.lines, want);
        assert.equal(got.bytes, want.reduce((s, l) => s + utf8(l), 0));
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('an unbounded line count shows the whole log, and skipped stays false', () => {
    fc.assert(
      fc.property(logText, sizes, (text, cut) => {
        const got = collect(chunksOf(text, cut), { lines: Number.POSITIVE_INFINITY, bytes: utf8(text) + 1 }, false);
        assert.deepEqual(got.lines, modelLines(text));
        assert.equal(got.skipped, false);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('skipped is true exactly when lines were left out or the oldest shown was clipped', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, byteBudget, fc.boolean(), (text, cut, n, budget, stop) => {
        const model = modelLines(text);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: budget }, stop);
        const { clipped } = assertTailOf(model, got.lines, 'tail');
        const leftOut = got.lines.length < model.length || clipped;
        assert.equal(got.skipped, leftOut, `skipped=${got.skipped} but ${got.lines.length} of ${model.length} lines shown${clipped ? ', oldest clipped' : ''}: ${JSON.stringify(got.lines)}`);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('a byte budget keeps the end of the log: a suffix of its lines, only the oldest clipped, within budget', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, byteBudget, fc.boolean(), (text, cut, n, budget, stop) => {
        const model = modelLines(text);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: budget }, stop);
        const { clipped } = assertTailOf(model, got.lines, 'tail');
        assert.ok(got.lines.length <= n);
        assert.equal(got.bytes, got.lines.reduce((s, l) => s + utf8(l), 0), 'bytes is the UTF-8 length of the lines kept');
        assert.ok(got.bytes <= budget, `${got.bytes} bytes > budget ${budget}`);
        for (const l of got.lines) assert.ok(!l.includes('\n'), 'a kept line holds no newline');
        // The newest line is always shown (clipped when it must be).
        if (model.length > 0) assert.ok(got.lines.length > 0, 'nothing shown of a non-empty log');
        if (clipped) assert.ok(got.bytes > budget - 4, `a clipped line leaves ${budget - got.bytes} bytes of the budget unused`);
        // Maximal: an older line is left out only when the line limit or the budget forbids it.
        if (!clipped && got.bytes < budget && got.lines.length < Math.min(n, model.length)) {
          const older = model[model.length - got.lines.length - 1]!;
          assert.ok(utf8(older) > budget - got.bytes, `${JSON.stringify(older)} (${utf8(older)} bytes) would have fit in ${budget - got.bytes}`);
        }
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('a budget too small for the marker shows nothing rather than a line emptied by the clip', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, fc.integer({ min: 1, max: utf8(CLIPPED) }), fc.boolean(), (text, cut, n, budget, stop) => {
        const model = modelLines(text);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: budget }, stop);
        assertTailOf(model, got.lines, 'tail');
        assert.ok(got.bytes <= budget);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('errors only, with room enough: exactly the last N lines that match ERROR_LINE', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, fc.boolean(), (text, cut, n, stop) => {
        const model = modelLines(text);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: utf8(text) + 1, keep: keepErrors }, stop);
        const matching = model.filter(keepErrors);
        assert.deepEqual(got.lines, matching.slice(-n));
        assert.equal(got.skipped, got.lines.length < model.length, `skipped=${got.skipped}: ${got.lines.length} of ${model.length} lines shown`);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('errors only within a byte budget: the end of the matching lines, only the oldest clipped', () => {
    fc.assert(
      fc.property(logText, sizes, lineLimit, byteBudget, fc.boolean(), (text, cut, n, budget, stop) => {
        const matching = modelLines(text).filter(keepErrors);
        const got = collect(chunksOf(text, cut), { lines: n, bytes: budget, keep: keepErrors }, stop);
        assertTailOf(matching, got.lines, 'errors');
        assert.ok(got.bytes <= budget);
        assert.equal(got.bytes, got.lines.reduce((s, l) => s + utf8(l), 0));
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('where the chunks are cut does not change the excerpt', () => {
    fc.assert(
      fc.property(logText, sizes, sizes, lineLimit, byteBudget, fc.boolean(), fc.boolean(), (text, cutA, cutB, n, budget, errorsOnly, stop) => {
        const limits = { lines: n, bytes: budget, ...(errorsOnly ? { keep: keepErrors } : {}) };
        const a = collect(chunksOf(text, cutA), limits, stop);
        const b = collect(chunksOf(text, cutB), limits, stop);
        // (skipped is checked against the model above; a wrong one would fail here too.)
        assert.deepEqual({ lines: a.lines, bytes: a.bytes }, { lines: b.lines, bytes: b.bytes });
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('empty chunks anywhere (an executor may send one) change nothing', () => {
    fc.assert(
      fc.property(logText, sizes, fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), lineLimit, fc.boolean(), (text, cut, at, n, stop) => {
        const chunks = chunksOf(text, cut);
        const withEmpty = [...chunks];
        for (const i of at) withEmpty.splice(i % (withEmpty.length + 1), 0, '');
        const limits = { lines: n, bytes: utf8(text) + 1 };
        assert.deepEqual(collect(withEmpty, limits, stop).lines, collect(chunks, limits, stop).lines, `chunks ${JSON.stringify(withEmpty)}`);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('a fresh collector with zero limits is full at once and shows nothing', () => {
    for (const limits of [{ lines: 0, bytes: 100 }, { lines: 5, bytes: 0 }, { lines: -1, bytes: -1 }]) {
      const got = collect(['a\n', 'b\n'], limits, false);
      assert.deepEqual(got.lines, []);
      assert.equal(got.full, true);
      assert.equal(got.skipped, true);
    }
    assert.deepEqual(collect([], { lines: 5, bytes: 100 }, false), { lines: [], bytes: 0, skipped: false, full: false });
  });
});

describe('ERROR_LINE', () => {
  test('recognises the exception and error lines of JVMs and Python (class names ending in Exception or Error)', () => {
    const errors = [
      'ERROR CSV Reader 3:1 Execute failed: file not found',
      'Exception in thread "main" java.lang.IllegalStateException: boom',
      'java.lang.NullPointerException',
      'Caused by: java.io.IOException: No space left on device',
      'org.knime.core.node.InvalidSettingsException: column "x" missing',
      'java.lang.OutOfMemoryError: Java heap space',
      'ValueError: invalid literal for int() with base 10',
      'KeyError: \'rows\'',
      'Traceback (most recent call last):',
      'SEVERE: cannot bind port',
    ];
    assert.deepEqual(errors.filter((l) => !ERROR_LINE.test(l)), [], 'error lines the errors-only filter misses');
    for (const l of ['INFO all good', '  at org.knime.core.Node.execute(Node.java:42)', 'Processed 12 rows']) assert.equal(ERROR_LINE.test(l), false, l);
  });
});

describe('TailCollector sections (finish with a heading), as logText reads attempts', () => {
  const heading = (i: number) => `--- attempt ${i + 1} ---`;
  /**
   * Every attempt newest first, each under its heading, stopping once full (RunsService.logText).
   * `skipped` is what the caller must report: the collector's flag, or attempts with lines that the
   * loop never read (the collector cannot know of those; the runner test of logText checks that).
   */
  function sectioned(texts: string[][], limits: ExcerptLimits, stop: boolean) {
    const tail = new TailCollector(limits);
    let i = texts.length - 1;
    for (; i >= 0 && !(stop && tail.full); i--) {
      feed(tail, texts[i]!, stop);
      tail.finish(heading(i));
    }
    const unread = texts.slice(0, i + 1).some((chunks) => chunks.join('') !== '');
    return { lines: tail.lines(), bytes: tail.bytes, skipped: tail.skipped || unread };
  }
  /** Headings only above sections with lines. */
  const modelOf = (texts: string[]) => texts.flatMap((t, i) => (modelLines(t).length ? [heading(i), ...modelLines(t)] : []));
  const sections = fc.tuple(fc.array(fc.oneof({ weight: 4, arbitrary: logText }, { weight: 1, arbitrary: fc.constant('') }), { maxLength: 5 }), sizes);

  test('with room for everything: each non-empty section under its heading, oldest first, nothing skipped', () => {
    fc.assert(
      fc.property(sections, fc.boolean(), ([texts, cut], stop) => {
        const total = texts.reduce((s, t) => s + utf8(t) + 40, 1);
        const got = sectioned(texts.map((t) => chunksOf(t, cut)), { lines: Number.POSITIVE_INFINITY, bytes: total }, stop);
        assert.deepEqual(got.lines, modelOf(texts));
        assert.equal(got.skipped, false);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('within a budget: the end of the sectioned log, headings only above lines shown, skipped when anything is left out', () => {
    fc.assert(
      fc.property(sections, fc.oneof(lineLimit, fc.constant(Number.POSITIVE_INFINITY)), byteBudget, fc.boolean(), ([texts, cut], n, budget, stop) => {
        const model = modelOf(texts);
        const got = sectioned(texts.map((t) => chunksOf(t, cut)), { lines: n, bytes: budget }, stop);
        const { clipped } = assertTailOf(model, got.lines, 'sections');
        assert.ok(got.bytes <= budget);
        // A heading shown is followed by a line of its section.
        got.lines.forEach((l, j) => {
          if (/^--- attempt \d+ ---$/.test(l) && model.includes(l)) assert.ok(j + 1 < got.lines.length && !/^--- attempt \d+ ---$/.test(got.lines[j + 1]!), `heading ${l} above no lines`);
        });
        assert.equal(got.skipped, got.lines.length < model.length || clipped, `skipped=${got.skipped}: ${got.lines.length} of ${model.length}`);
      }),
      { numRuns: RUNS, includeErrorInReport: true },
    );
  });

  test('a heading is never shown for a section that kept no lines (explicit cases)', () => {
    const tail = new TailCollector({ lines: 100, bytes: 1000 });
    tail.finish('--- attempt 3 ---'); // an attempt with no log at all
    tail.prepend('only\n');
    tail.finish('--- attempt 2 ---');
    tail.finish('--- attempt 1 ---');
    assert.deepEqual(tail.lines(), ['--- attempt 2 ---', 'only']);
    const errors = new TailCollector({ lines: 100, bytes: 1000, keep: keepErrors });
    errors.prepend('ERROR newest\n');
    errors.finish('--- attempt 2 ---');
    errors.prepend('all fine\nstill fine\n'); // nothing kept by the filter
    errors.finish('--- attempt 1 ---');
    assert.deepEqual(errors.lines(), ['--- attempt 2 ---', 'ERROR newest']);
    assert.equal(errors.skipped, true);
  });
});

describe('clipStart', () => {
  const text = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 80 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.tuple(fc.constantFrom('a', 'é', '€', '😀', '中', '👩‍👩‍👧'), fc.integer({ min: 0, max: 300 })).map(([c, k]) => c.repeat(k)),
  );
  const budget = fc.oneof(fc.integer({ min: -3, max: 12 }), fc.integer({ min: 0, max: 2000 }));

  test('fits the budget, keeps the end of the line behind the marker, and round-trips as UTF-8', () => {
    fc.assert(
      fc.property(text, budget, (s, b) => {
        const r = clipStart(s, b);
        assert.ok(utf8(r) <= Math.max(b, 0), `${utf8(r)} bytes > ${b}`);
        if (b <= utf8(CLIPPED)) {
          assert.equal(r, '');
          return;
        }
        assert.ok(r.startsWith(CLIPPED), JSON.stringify(r));
        const kept = r.slice(CLIPPED.length);
        assert.ok(s.endsWith(kept), `${JSON.stringify(kept)} is not the end of ${JSON.stringify(s)}`);
        assert.equal(Buffer.from(r).toString('utf8'), r, 'valid UTF-8');
        if (!s.includes('\uFFFD')) assert.ok(!r.includes('\uFFFD'), 'no replacement character introduced');
        // As much as fits: at most one character (up to 3 bytes short of a whole one) is lost to the boundary.
        const room = b - utf8(CLIPPED);
        assert.ok(utf8(kept) >= Math.min(utf8(s), room - 3), `kept ${utf8(kept)} of room ${room}`);
        if (utf8(s) <= room) assert.equal(kept, s);
      }),
      { numRuns: 500, includeErrorInReport: true },
    );
  });
});

/** The smallest inputs the properties above shrink to, one case each, as RunsService feeds them. */
describe('TailCollector: minimal cases', () => {
  test('a left-out empty first line counts as skipped (log "\\nb", 1 line)', () => {
    assert.equal(collect(['\n', 'b'], { lines: 1, bytes: 100 }, false).skipped, true);
    // readBack stops once full: log "a\nb" chunked ["a", "\nb"] shows ["b"] and must say "a" is left out.
    const stopped = collect(['a', '\nb'], { lines: 1, bytes: 100 }, true);
    assert.deepEqual(stopped.lines, ['b']);
    assert.equal(stopped.skipped, true);
  });

  test('an empty chunk adds no line', () => {
    assert.deepEqual(collect(['abc\n', ''], { lines: 10, bytes: 100 }, false).lines, ['abc']);
    assert.deepEqual(collect([''], { lines: 10, bytes: 100 }, false).lines, []);
  });

  test('a line clipped to fit ends the excerpt (no older line above it)', () => {
    // "€€€€€" is 15 bytes; clipped into 10 it keeps "…€€" (9 bytes), and the empty line before must not follow.
    assert.deepEqual(collect(['\n', '€€€€€'], { lines: 10, bytes: 10 }, false).lines, ['…€€']);
  });

  test('errors only: a long error line is kept whatever the chunks (the filter sees its start, not only its clipped end)', () => {
    // read_run_log's smallest budget (256 bytes) holds lines of up to 4 × 256 + 16 characters whole; this one is longer.
    const line = `ERROR CSV Reader 3:1 Execute failed: ${'x'.repeat(2000)}`;
    const text = `INFO starting\n${line}\n`;
    const limits = { lines: 10, bytes: 256, keep: keepErrors };
    const whole = collect([text], limits, true);
    assert.deepEqual(whole.lines, [clipStart(line, 256)]);
    assert.deepEqual(collect(chunksOf(text, [100]), limits, true).lines, whole.lines, 'the same line sent in 100-character chunks');
  });

  test('a budget smaller than the marker shows no emptied line', () => {
    const got = collect(['abc'], { lines: 1, bytes: 2 }, false);
    assert.ok(!got.lines.includes(''), JSON.stringify(got.lines));
  });

  test('a section that fills the budget exactly, its heading left out, counts as skipped', () => {
    // logText: attempt 2 ("xxxxx", exactly 5 bytes) fills the budget; its heading is not shown.
    const tail = new TailCollector({ lines: Number.POSITIVE_INFINITY, bytes: 5 });
    tail.prepend('xxxxx\n');
    tail.finish('--- attempt 2 ---');
    assert.equal(tail.full, true);
    assert.deepEqual(tail.lines(), ['xxxxx']);
    assert.equal(tail.skipped, true, 'the heading of attempt 2 is not shown');
  });
});

test('the log resource of a million empty lines stops at its line limit', async () => {
  // A stand-in for the repository's backwards page read: 1,000,000 chunks of one newline each.
  const total = 1_000_000;
  const source = {
    async logsBefore(_run: string, _attempt: number, before: number, limit: number) {
      const from = Math.min(before, total + 1) - 1;
      return Array.from({ length: Math.max(0, Math.min(limit, from)) }, (_, i) => ({ run_id: 'r', attempt: 1, seq: from - i, text: '\n', created_at: '' }));
    },
  };
  const run = { id: 'r', attempt: 1 } as Parameters<typeof readLogText>[1];
  const { text, truncated } = await readLogText(source, run, 2 * 1024 * 1024, 1000);
  assert.equal(text, '\n'.repeat(1000));
  assert.equal(truncated, true);
});

test('the log resource of one endless line reads a bounded part of it, not the whole log', async () => {
  // 2,400 chunks of 64 KiB without a line break (a 150 MiB one-line log, as `yes | tr -d '\n'`
  // prints): the answer is the line's end, clipped, and the read stops long before the start.
  const chunk = 64 * 1024;
  const total = 2_400;
  let read = 0;
  const source = {
    async logsBefore(_run: string, _attempt: number, before: number, limit: number) {
      const from = Math.min(before, total + 1) - 1;
      const rows = Array.from({ length: Math.max(0, Math.min(limit, from)) }, (_, i) => ({ run_id: 'r', attempt: 1, seq: from - i, text: (from - i) === total ? 'x'.repeat(chunk - 3) + 'END' : 'x'.repeat(chunk), created_at: '' }));
      read += rows.length;
      return rows;
    },
  };
  const run = { id: 'r', attempt: 1 } as Parameters<typeof readLogText>[1];
  const budget = 2 * 1024 * 1024;
  const { text, truncated } = await readLogText(source, run, budget, 1000);
  assert.equal(truncated, true);
  assert.ok(text.startsWith(CLIPPED), text.slice(0, 20));
  assert.ok(text.endsWith('END\n'), text.slice(-20));
  assert.ok(Buffer.byteLength(text) <= budget + 1, `${Buffer.byteLength(text)} bytes`);
  assert.ok(read <= 400, `read ${read} of ${total} chunks`);
});
