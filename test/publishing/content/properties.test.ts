// Property tests: the parsers face arbitrary vendor input over a public API, so they must
// never throw, must report lines that exist, and must read back any well-formed document.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { XMLValidator } from 'fast-xml-parser';
import { CHANGE_TYPES, parseChangelog } from '../../../src/publishing/content/changelog.js';
import { parseFaq } from '../../../src/publishing/content/faq.js';
import { findRelativeLinks, renderMarkdown, stripHtmlComments } from '../../../src/publishing/content/markdown.js';
import { sanitizeSvg } from '../../../src/publishing/content/svg.js';

// ---------- (a) arbitrary input never throws ----------

const MD_FRAGMENTS = [
  '', '#', '# Title', '## [1.0.0] - 2024-01-01', '## [Unreleased]', '## [x]', '## [1.0.0] - 2023-02-29',
  '### Added', '### Foo', '####', '- item', '  - nested', '* star', '1. one', '```', '~~~', '    code',
  '<!--', '-->', '<!-->', '[a](./b)', '![i](c.png)', '[r]: ./x', '[r]', '**Breaking:**', '> ## quoted',
  '| a |', '|---|', '---', '===', '\t- tab', '- ```', '<svg>', '&amp;', '\\', '[', ']', '(', ')',
];
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }));
const line = fc.array(fc.oneof(fc.constantFrom(...MD_FRAGMENTS), anyText), { maxLength: 4 }).map((parts) => parts.join(''));
const markdownish = fc.tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n', '\r')).map(([ls, nl]) => ls.join(nl));
const anyInput = fc.oneof(anyText, markdownish);

const lineCount = (src: string) => src.split(/\r\n?|\n/).length;
const linesWithin = (issues: { line?: number }[], max: number) =>
  issues.every((i) => i.line === undefined || (Number.isInteger(i.line) && i.line >= 1 && i.line <= max));

describe('properties: arbitrary input', () => {
  it('parseChangelog never throws and reports only existing lines', () => {
    fc.assert(fc.property(anyInput, (src) => {
      const r = parseChangelog(src);
      assert.ok(linesWithin([...r.errors, ...r.warnings], lineCount(src)));
      assert.equal(r.changelog === null, r.errors.length > 0);
    }), { numRuns: 400 });
  });

  it('parseFaq never throws and reports only existing lines', () => {
    fc.assert(fc.property(anyInput, (src) => {
      const r = parseFaq(src);
      assert.ok(linesWithin([...r.errors, ...r.warnings, ...r.entries], lineCount(src)));
    }), { numRuns: 400 });
  });

  it('findRelativeLinks never throws and reports only existing lines; renderMarkdown never throws', () => {
    fc.assert(fc.property(anyInput, (src) => {
      assert.ok(linesWithin(findRelativeLinks(src), lineCount(src)));
      assert.equal(typeof renderMarkdown(src).html, 'string');
    }), { numRuns: 400 });
  });

  it('stripHtmlComments keeps the number of lines and leaves no opening "<!--" outside code', () => {
    fc.assert(fc.property(anyInput, (src) => {
      const out = stripHtmlComments(src);
      assert.equal(lineCount(out), lineCount(src));
      if (!/```|~~~|^ {4}|\t/m.test(src)) assert.ok(!out.includes('<!--'));
    }), { numRuns: 400 });
  });

  const XML_FRAGMENTS = ['<svg>', '</svg>', '<svg/>', '<g>', '</g>', '<rect/>', '<script>', '</script>', '<!--', '-->',
    '<![CDATA[', ']]>', '<?xml version="1.0"?>', '<!DOCTYPE svg>', ' a="1"', ' href="#x"', '&amp;', '&#0;', '&#x110000;', '>', '"'];
  const xmlish = fc.array(fc.oneof(fc.constantFrom(...XML_FRAGMENTS), anyText), { maxLength: 20 }).map((p) => p.join(''));

  it('sanitizeSvg never throws and either returns an <svg> or an error', () => {
    fc.assert(fc.property(fc.oneof(anyText, xmlish), (markup) => {
      const r = sanitizeSvg(markup);
      if ('svg' in r) assert.ok(r.svg.startsWith('<svg'));
      else assert.equal(typeof r.error, 'string');
    }), { numRuns: 400 });
  });
});

// ---------- (b) generated well-formed changelogs round-trip ----------

const num = fc.nat({ max: 2000 }).map(String);
const ident = fc.stringMatching(/^[0-9A-Za-z]{1,6}$/);
const semver = fc
  .tuple(num, num, num, fc.option(fc.array(ident, { minLength: 1, maxLength: 3 })), fc.option(fc.array(ident, { minLength: 1, maxLength: 2 })))
  .map(([a, b, c, pre, build]) => `${a}.${b}.${c}${pre ? `-${pre.join('.')}` : ''}${build ? `+${build.join('.')}` : ''}`);
const osgi = fc.tuple(num, num, num, fc.stringMatching(/^[A-Za-z0-9_-]{1,16}$/)).map(([a, b, c, q]) => `${a}.${b}.${c}.${q}`);
const short = fc.oneof(num, fc.tuple(num, num).map(([a, b]) => `${a}.${b}`));
const version = fc.oneof(semver, osgi, short);

const leap = (y: number) => y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
const date = fc
  .tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }))
  .chain(([y, m]) => {
    const days = [31, leap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 28;
    return fc.integer({ min: 1, max: days }).map((d) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`);
  });

const words = fc
  .tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,7}$/), fc.array(fc.stringMatching(/^[A-Za-z0-9]{1,8}$/), { maxLength: 5 }))
  .map(([first, rest]) => [first, ...rest].join(' '));

/** An item as parsed back (`markdown`) and as written under "- " (`source`). */
const item = fc.tuple(words, fc.constantFrom('plain', 'code', 'nested', 'breaking')).map(([text, kind]) => {
  const markdown = {
    plain: text,
    code: `${text}\n\`\`\`\n- not an item\n## [9.9.9] - 2024-01-01\n### Removed\n\`\`\``,
    nested: `${text}\n- child ${text}`,
    breaking: `**Breaking:** ${text}`,
  }[kind];
  return { markdown, source: `- ${markdown.split('\n').join('\n  ')}`, breaking: kind === 'breaking' };
});
const section = fc.record({ type: fc.constantFrom(...CHANGE_TYPES), items: fc.array(item, { minLength: 1, maxLength: 4 }) });
const release = fc.record({
  version,
  date,
  yanked: fc.boolean(),
  summary: fc.option(words),
  sections: fc.array(section, { maxLength: 4 }),
});
const changelogDoc = fc.record({
  unreleased: fc.option(fc.array(section, { maxLength: 2 })),
  releases: fc.uniqueArray(release, { selector: (r) => r.version, maxLength: 6 }),
  intro: fc.option(words),
  gap: fc.constantFrom('\n', '\n\n'),
  newline: fc.constantFrom('\n', '\r\n'),
});

type Section = { type: string; items: { markdown: string; source: string; breaking: boolean }[] };
const writeSections = (sections: Section[], gap: string) =>
  sections.map((s) => `### ${s.type}${gap}${s.items.map((i) => i.source).join(gap)}`).join(gap);

describe('properties: generated changelogs', () => {
  it('parse back to exactly the generated versions, dates, sections and items, in order', () => {
    fc.assert(fc.property(changelogDoc, (doc) => {
      const blocks = ['# Changelog'];
      if (doc.intro) blocks.push(doc.intro);
      if (doc.unreleased) blocks.push(['## [Unreleased]', writeSections(doc.unreleased, doc.gap)].filter(Boolean).join(doc.gap));
      for (const r of doc.releases) {
        const heading = `## [${r.version}] - ${r.date}${r.yanked ? ' [YANKED]' : ''}`;
        blocks.push([heading, r.summary ?? '', writeSections(r.sections, doc.gap)].filter(Boolean).join(doc.gap));
      }
      const src = blocks.join(doc.gap).split('\n').join(doc.newline);
      const parsed = parseChangelog(src);
      assert.deepEqual(parsed.errors, []);
      assert.deepEqual(parsed.warnings, []);
      const releases = parsed.changelog?.releases ?? [];
      const expected = [
        ...(doc.unreleased ? [{ version: 'Unreleased', date: null, yanked: false, summary: null, sections: doc.unreleased }] : []),
        ...doc.releases,
      ];
      assert.equal(parsed.changelog?.intro, doc.intro ?? '');
      assert.deepEqual(releases.map((r) => r.version), expected.map((r) => r.version));
      assert.deepEqual(releases.map((r) => r.date), expected.map((r) => r.date));
      assert.deepEqual(releases.map((r) => r.yanked), expected.map((r) => r.yanked));
      assert.deepEqual(releases.map((r) => r.summary), expected.map((r) => r.summary ?? ''));
      assert.deepEqual(
        releases.map((r) => r.breaking),
        expected.map((r) => r.sections.some((s: Section) => s.items.some((i) => i.breaking))),
      );
      assert.deepEqual(
        releases.map((r) => r.sections.map((s) => ({ type: s.type, known: s.known, items: s.items.map((i) => i.markdown) }))),
        expected.map((r) => r.sections.map((s: Section) => ({ type: s.type, known: true, items: s.items.map((i) => i.markdown) }))),
      );
    }), { numRuns: 300 });
  });
});

// ---------- (c) hostile SVGs come out clean and stable ----------

const HOSTILE_VALUES = [
  'javascript:alert(1)', 'JaVaScRiPt:alert(1)', '&#106;avascript:alert(1)', '&#x6A;&#x61;vascript:x', 'java&#x09;script:x',
  'java&#10;script:x', ' javascript:x', 'javascript&#58;x', 'url(javascript:x)', 'url(https://evil.example/x)',
  'url( &quot;//evil.example&quot; )', 'data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;', 'fill:url(javascript:x)',
  'fill:red;background:url(https://e.example)', '@import url(x)', 'expression(alert(1))', 'alert(1)',
];
const BENIGN_VALUES = ['#a', '1', 'red', 'url(#g)', 'M0 0h1', 'fill:red', 'translate(1 2)', '0 0 10 10'];
const ATTR_NAMES = ['href', 'xlink:href', 'style', 'fill', 'mask', 'filter', 'class', 'id', 'onload', 'ONCLICK', 'onmouseover', 'width', 'to', 'values', 'src'];
const attrName = fc.oneof({ arbitrary: fc.constantFrom(...ATTR_NAMES), weight: 4 }, { arbitrary: fc.stringMatching(/^on[a-z]{1,8}$/), weight: 1 });
const attrs = fc
  .uniqueArray(fc.tuple(attrName, fc.constantFrom(...HOSTILE_VALUES, ...BENIGN_VALUES)), { selector: ([n]) => n, maxLength: 4 })
  .map((as) => as.map(([n, v]) => ` ${n}="${v}"`).join(''));
const HOSTILE_ELEMENTS = ['script', 'SCRIPT', 'foreignObject', 'style', 'image', 'animate', 'set', 'iframe', 'feImage', 'handler'];
const SAFE_ELEMENTS = ['g', 'rect', 'path', 'circle', 'text', 'tspan', 'defs', 'linearGradient', 'use', 'a', 'title', 'mask'];
const HOSTILE_TEXT = ['alert(1)', 'javascript:alert(1)', '<![CDATA[<script>alert(1)</script>]]>', '&lt;script&gt;', 'onload="x"'];
const safeText = fc.oneof(fc.stringMatching(/^[a-z ]{0,10}$/), fc.constant('&lt;script&gt;'), fc.constant('<![CDATA[ x < y ]]>'));

const { tree } = fc.letrec<{ tree: string }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    safeText,
    fc.tuple(fc.constantFrom(...HOSTILE_ELEMENTS), attrs, fc.constantFrom(...HOSTILE_TEXT), fc.array(tie('tree'), { maxLength: 2 }))
      .map(([el, a, text, kids]) => `<${el}${a}>${text}${kids.join('')}</${el}>`),
    fc.tuple(fc.constantFrom(...SAFE_ELEMENTS), attrs, fc.array(tie('tree'), { maxLength: 3 }))
      .map(([el, a, kids]) => `<${el}${a}>${kids.join('')}</${el}>`),
  ),
}));
const hostileSvg = fc.tuple(attrs, fc.array(tree, { maxLength: 4 })).map(([a, kids]) => `<svg${a}>${kids.join('')}<rect width="1" height="1"/></svg>`);

describe('properties: hostile SVG', () => {
  it('never outputs scripts, handlers, javascript: or data:, and sanitizing again changes nothing', () => {
    fc.assert(fc.property(hostileSvg, (markup) => {
      assert.equal(XMLValidator.validate(markup), true, 'generator must produce well-formed XML');
      const r = sanitizeSvg(markup);
      assert.ok('svg' in r, JSON.stringify(r));
      assert.doesNotMatch(r.svg, /<script/i);
      assert.doesNotMatch(r.svg, /<(?:foreignObject|style|image|iframe|animate|set)\b/i);
      assert.doesNotMatch(r.svg, /\son[a-z]*\s*=/i);
      assert.doesNotMatch(r.svg, /javascript:|data:/i);
      assert.equal(XMLValidator.validate(r.svg), true);
      assert.deepEqual(sanitizeSvg(r.svg), { svg: r.svg });
    }), { numRuns: 500 });
  });
});
