import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { contrastRatio, MIN_CONTRAST, readableOn, textColorOn } from '../../../src/publishing/web/colors.js';
import { cssUrl, installLabels, productColors } from '../../../src/publishing/web/presenter.js';

const site = { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'https://dl.example' };
const label = (name: string, files = 1, hasArchive = false) => ({ label: name, files, bytes: 1, hasArchive, lastUploadAt: null, archiveBytes: hasArchive ? 5 : 0 });

describe('colors', () => {
  it('picks the text colour with the better worst-case contrast', () => {
    assert.equal(textColorOn(['#000000']), '#ffffff');
    assert.equal(textColorOn(['#ffffff', '#ffcc00']), '#111418');
    assert.ok(contrastRatio('#000000', '#ffffff') > 20);
  });

  it('always reaches AA over both gradient ends, with a veil when needed', () => {
    const hex = fc.integer({ min: 0, max: 0xffffff }).map((n) => `#${n.toString(16).padStart(6, '0')}`);
    fc.assert(
      fc.property(hex, hex, (c1, c2) => {
        const { text, scrim } = readableOn([c1, c2]);
        if (scrim === null) {
          assert.ok(contrastRatio(text, c1) >= MIN_CONTRAST && contrastRatio(text, c2) >= MIN_CONTRAST);
        } else {
          const alpha = Number(/\/ (\d+)%/.exec(scrim)?.[1]) / 100;
          assert.ok(alpha > 0 && alpha <= 0.95);
        }
      }),
    );
    assert.equal(readableOn(['#123456', '#abcdef']).text, '#ffffff');
    assert.match(readableOn(['#123456', '#abcdef']).scrim ?? '', /^rgb\(0 0 0 \/ \d+%\)$/);
    assert.equal(readableOn(['#000000', '#1a1a1a']).scrim, null);
  });

  it('defaults colours from the product id when unset; one colour means a flat header', () => {
    const a = productColors('abc', undefined);
    assert.deepEqual(productColors('abc', undefined), a, 'stable');
    assert.notEqual(productColors('xyz', undefined).color1, a.color1);
    const one = productColors('abc', { color1: '#F80' });
    assert.equal(one.color1, '#ff8800');
    assert.equal(one.color2, '#ff8800');
  });
});

describe('installLabels', () => {
  it('recommends the platform release, else the highest label (numeric order), and lists it first', () => {
    const labels = [label('5.9'), label('5.10', 1, true), label('5.4'), label('5.11', 0, true), label('5.2', 0, false)];
    const r = installLabels(site, 'p', labels, '5.4');
    assert.deepEqual(r.map((l) => [l.label, l.recommended]), [['5.4', true], ['5.11', false], ['5.10', false], ['5.9', false]]);
    assert.equal(r[0]?.url, 'https://dl.example/p/5.4');
    assert.equal(r[2]?.archiveUrl, 'https://dl.example/p/5.10.zip');
    assert.equal(r[2]?.url, 'https://dl.example/p/5.10');
    assert.equal(r[0]?.archiveUrl, null);
    assert.deepEqual(installLabels(site, 'p', [], '5.4'), []);
  });

  it('offers a label uploaded only as an archive: its download link, no update-site URL; it may be the recommended one', () => {
    const labels = [label('5.9'), label('5.11', 0, true)];
    const [first, second] = installLabels(site, 'p', labels, null);
    assert.deepEqual(first, { label: '5.11', url: null, recommended: true, archiveUrl: 'https://dl.example/p/5.11.zip', archiveBytes: 5, lastUploadAt: null, platformRange: null, platformReleases: null, why: 'The newest label.', notice: null });
    assert.equal(second?.url, 'https://dl.example/p/5.9');
    assert.equal(installLabels(site, 'p', labels, '5.9')[0]?.label, '5.9', 'the platform release wins over the higher archive');
    assert.deepEqual(installLabels(site, 'p', [label('5.2', 0, false)], null), [], 'a label with neither files nor archive is not offered');
  });

  it('every offered label has an update site or an archive, exactly one is recommended and comes first', () => {
    const summary = fc.record({
      label: fc.stringMatching(/^[0-9a-z][0-9a-z.-]{0,6}$/),
      files: fc.integer({ min: 0, max: 3 }),
      hasArchive: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.uniqueArray(summary, { selector: (s) => s.label, maxLength: 8 }), fc.option(fc.constantFrom('5.4', '1', 'a')), (raw, release) => {
        const labels = raw.map((s) => label(s.label, s.files, s.hasArchive));
        const r = installLabels(site, 'p', labels, release);
        assert.deepEqual(r.map((l) => l.label).sort(), raw.filter((s) => s.files > 0 || s.hasArchive).map((s) => s.label).sort());
        for (const l of r) {
          const s = raw.find((x) => x.label === l.label)!;
          assert.equal(l.url, s.files > 0 ? `https://dl.example/p/${l.label}` : null);
          assert.equal(l.archiveUrl, s.hasArchive ? `https://dl.example/p/${l.label}.zip` : null);
        }
        assert.equal(r.filter((l) => l.recommended).length, r.length ? 1 : 0);
        if (r.length) assert.ok(r[0]!.recommended);
        if (r.some((l) => l.label === release)) assert.equal(r[0]!.label, release);
      }),
    );
  });
});

describe('cssUrl', () => {
  it('keeps http(s) URLs and escapes what could end url("…")', () => {
    assert.equal(cssUrl('https://img.example/a b.png'), 'https://img.example/a%20b.png');
    assert.equal(cssUrl('https://img.example/a.png")x'), 'https://img.example/a.png%22%29x');
    assert.equal(cssUrl("https://img.example/a'(\\"), 'https://img.example/a%27%28/');
    assert.equal(cssUrl('javascript:alert(1)'), null);
    assert.equal(cssUrl('not a url'), null);
    fc.assert(fc.property(fc.webUrl(), fc.string(), (u, tail) => {
      const out = cssUrl(u + tail);
      assert.ok(out === null || !/["'()\\\s<>]/.test(out));
    }));
  });
});
