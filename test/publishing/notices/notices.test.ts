// The label notices' rules as pure functions (notices/notices.ts), the install list they shape
// (web/presenter.ts) and the download host's label of a URL (downloads/paths.ts), with
// fast-check over arbitrary input.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { FieldProblem } from '../../../src/infra/errors.js';
import type { LabelNotices } from '../../../src/publishing/model/fields.js';
import { labelOfTarget, parseDownloadPath } from '../../../src/publishing/downloads/paths.js';
import {
  isLabelsPatch,
  labelNoticeProblems,
  mergeLabelNotices,
  validateLabelsPatch,
  withdrawnOf,
} from '../../../src/publishing/notices/notices.js';
import { installLabels } from '../../../src/publishing/web/presenter.js';

const site = { name: 'Pier', baseUrl: 'https://pier.example', downloadUrl: 'https://dl.example' };
const label = (name: string) => ({ label: name, files: 1, bytes: 1, hasArchive: false, lastUploadAt: null, archiveBytes: 0 });
const notice = (status: 'deprecated' | 'withdrawn', replacement?: string) => ({ status, since: '2026-01-01T00:00:00.000Z', ...(replacement ? { replacement } : {}) });

describe('validateLabelsPatch', () => {
  test('never throws; every problem names a labels field; a result passes the worker-reply check', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.jsonValue(), fc.record({ status: fc.jsonValue(), message: fc.jsonValue(), replacement: fc.jsonValue() }, { requiredKeys: [] })))), (v) => {
        const errors: FieldProblem[] = [];
        const out = validateLabelsPatch(v, errors);
        for (const e of errors) assert.match(e.field, /^labels(\.|$)/);
        assert.ok(isLabelsPatch(out));
      }),
      { numRuns: 500 },
    );
  });

  test('messages: folded to one line, at most 500 characters (code points), no control characters or blank lines', () => {
    const ok = (message: string) => {
      const errors: FieldProblem[] = [];
      const out = validateLabelsPatch({ '5.1': { status: 'deprecated', message } }, errors);
      return errors.length ? null : (out['5.1']?.message ?? '');
    };
    assert.equal(ok(' a\r\n b\tc '), 'a b c');
    assert.equal(ok('😀'.repeat(500))?.length, 1000, '500 code points fit');
    assert.equal(ok('😀'.repeat(501)), null);
    assert.equal(ok('a\n\nb'), null);
    assert.equal(ok('a\r\n\r\nb'), null);
    assert.equal(ok('a\u0000'), null);
    assert.equal(ok('a\u2028b'), null);
    for (const invisible of ['\u200b', '\u200f', '\u202a', '\u202e', '\u2066', '\u2069', '\u2060', '\ufeff']) {
      assert.equal(ok(`Use 5.3${invisible} now`), null, `U+${invisible.codePointAt(0)!.toString(16)} (invisible or bidirectional) is refused`);
    }
    assert.equal(ok('   '), '', 'blank means no message');
  });
});

describe('mergeLabelNotices and labelNoticeProblems', () => {
  test('since moves with the status only', () => {
    const a = mergeLabelNotices(undefined, { '5.1': { status: 'deprecated', message: 'x' } }, 'T1')!;
    const b = mergeLabelNotices(a, { '5.1': { status: 'deprecated', message: 'y' } }, 'T2')!;
    const c = mergeLabelNotices(b, { '5.1': { status: 'withdrawn' } }, 'T3')!;
    assert.deepEqual([a['5.1']!.since, b['5.1']!.since, c['5.1']!.since], ['T1', 'T1', 'T3']);
    assert.equal(mergeLabelNotices(c, { '5.1': null }, 'T4'), undefined);
  });

  test('accepted notices never leave a cycle, a withdrawn replacement or a notice on a label not uploaded', () => {
    const names = ['a', 'b', 'c', 'd'];
    const uploaded = new Set(['a', 'b', 'c']);
    const n = fc.oneof(
      fc.constant(null),
      fc.record({ status: fc.constantFrom('deprecated' as const, 'withdrawn' as const), replacement: fc.option(fc.constantFrom(...names), { nil: undefined }) }).map((x) =>
        x.replacement === undefined ? { status: x.status } : { status: x.status, replacement: x.replacement },
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.dictionary(fc.constantFrom(...names), n, { maxKeys: 3 }), { maxLength: 6 }), (patches) => {
        let stored: LabelNotices | undefined;
        for (const body of patches) {
          const errors: FieldProblem[] = [];
          const sent = validateLabelsPatch(body, errors);
          if (errors.length || labelNoticeProblems(stored, sent, uploaded).length) continue;
          stored = mergeLabelNotices(stored, sent, 'T');
          for (const [l, x] of Object.entries(stored ?? {})) {
            const r = x.replacement;
            if (r === undefined) continue;
            assert.notEqual(stored?.[r]?.status, 'withdrawn', `${l} → withdrawn ${r}`);
            const seen = new Set([l]);
            for (let at: string | undefined = r; at !== undefined; at = stored?.[at]?.replacement) {
              assert.ok(!seen.has(at), `cycle through ${l}`);
              seen.add(at);
            }
          }
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('the install list with notices', () => {
  test('a withdrawn label is not offered nor recommended; a deprecated one carries its notice, its replacement only when offered', () => {
    const labels = [label('5.3'), label('5.2'), label('4.7'), label('4.6')];
    const notices: LabelNotices = {
      '5.3': notice('withdrawn', '5.2'),
      '5.2': { ...notice('deprecated', '4.6'), message: 'Use 4.6.' },
      '4.6': notice('deprecated', '4.5'),
    };
    const rows = installLabels(site, 'p', labels, '5.3', new Map(), notices);
    assert.deepEqual(rows.map((r) => [r.label, r.recommended]), [['5.2', true], ['4.7', false], ['4.6', false]]);
    assert.deepEqual(rows[0]!.notice, { label: '5.2', message: 'Use 4.6.', since: '2026-01-01T00:00:00.000Z', replacement: '4.6' });
    assert.equal(rows[1]!.notice, null);
    assert.equal(rows[2]!.notice?.replacement, null, '4.5 is not offered: no link');
  });

  test('labels named like inherited properties are plain labels', () => {
    const rows = installLabels(site, 'p', [label('constructor'), label('toString')], null, new Map(), { toString: notice('deprecated', 'constructor') });
    assert.deepEqual(rows.map((r) => [r.label, r.notice?.replacement ?? null]), [['toString', 'constructor'], ['constructor', null]]);
    const sent = validateLabelsPatch({ constructor: { status: 'deprecated', replacement: 'toString' } }, []);
    assert.deepEqual(labelNoticeProblems({}, sent, new Set(['constructor', 'toString'])), []);
    assert.equal(Object.getOwnPropertyDescriptor(mergeLabelNotices({}, sent, 'T'), 'constructor')?.value.since, 'T');
  });

  test('a label named "__proto__" gets its own notice (an assignment would set the prototype and lose it)', () => {
    // As the staff CLI and a stored row give it: JSON.parse makes "__proto__" an own key.
    const errors: FieldProblem[] = [];
    const sent = validateLabelsPatch(JSON.parse('{"__proto__": {"status": "withdrawn", "replacement": "5.2"}}'), errors);
    assert.deepEqual(errors, []);
    assert.equal(Object.getOwnPropertyDescriptor(sent, '__proto__')?.value.status, 'withdrawn');
    const stored = mergeLabelNotices({}, sent, 'T');
    assert.equal(Object.getPrototypeOf(stored), Object.prototype, 'the prototype is untouched');
    const text = JSON.stringify(stored);
    assert.match(text, /"__proto__":\{"status":"withdrawn"/);
    assert.deepEqual([...withdrawnOf(JSON.parse(text))], [['__proto__', '5.2']]);
    const cleared = mergeLabelNotices(JSON.parse(text) as LabelNotices, validateLabelsPatch(JSON.parse('{"__proto__": null}'), []), 'U');
    assert.equal(cleared, undefined);
  });

  test('withdrawnOf reads only withdrawn notices, whatever the stored JSON holds', () => {
    assert.deepEqual([...withdrawnOf({ a: notice('withdrawn', 'b'), b: notice('deprecated'), c: { status: 'withdrawn', replacement: 7 } })], [['a', 'b'], ['c', null]]);
    fc.assert(fc.property(fc.jsonValue(), (v) => void withdrawnOf(v)));
  });
});

describe('labelOfTarget', () => {
  test('the label of every URL form under a label, and none elsewhere', () => {
    const of = (p: string) => {
      const parsed = parseDownloadPath(p);
      return parsed.ok ? labelOfTarget(parsed.target) : 'refused';
    };
    assert.equal(of('/acme-tools/5.1/content.jar'), '5.1');
    assert.equal(of('/acme-tools/5.1/'), '5.1');
    assert.equal(of('/acme-tools/5.1'), '5.1');
    assert.equal(of('/acme-tools/5.1@3/plugins/a.jar'), '5.1');
    assert.equal(of('/acme-tools/5.1.zip'), '5.1');
    assert.equal(of('/acme-tools/5%2E1.zip'), '5.1');
    assert.equal(of('/assets/acme-tools/5.1/x'), null);
    assert.equal(of('/workflows/acme-tools/5.1.zip'), null);
  });
});
