import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { versionBadge } from '../../../src/publishing/content/badge.js';
import { releaseNotesHtml } from '../../../src/publishing/content/feeds.js';
import { substitutePlatformRelease } from '../../../src/publishing/content/placeholder.js';
import { renderedCharacters } from '../../../src/publishing/content/markdown.js';
import { renderProductContent } from '../../../src/publishing/content/product-content.js';

describe('substitutePlatformRelease', () => {
  it('replaces every placeholder, leaves text alone without a release', () => {
    assert.equal(substitutePlatformRelease('a {{platformRelease}} b `{{platformRelease}}`', '5.4'), 'a 5.4 b `5.4`');
    assert.equal(substitutePlatformRelease('a {{platformRelease}}', null), 'a {{platformRelease}}');
    assert.equal(substitutePlatformRelease('{{ platformRelease }} {{platformrelease}}', '5.4'), '{{ platformRelease }} {{platformrelease}}');
  });
});

describe('renderProductContent', () => {
  const fields = {
    name: 'P',
    text: '# Install\n\n```\nhttps://dl.example/p/{{platformRelease}}\n```\n\n## Usage',
    instructions: 'Use `{{platformRelease}}`',
    license: 'Free for {{platformRelease}}',
    faq: '## Which {{platformRelease}}?\n\n    indented {{platformRelease}}\n\n## Install\n\nYes [x]\n\n[x]: https://x.example/{{platformRelease}}',
    changelog:
      '# C\n\n## [Unreleased]\n### Added\n- soon\n\n## [2.0.0] - 2024-02-02 [YANKED]\n### Fixed\n- bad\n\n## [1.0.0] - 2024-01-01\nSummary {{platformRelease}}\n### Added\n- `{{platformRelease}}` support ([#1])\n  ```\n  code {{platformRelease}}\n  ```\n### Custom\n- other\n\n[#1]: https://issues.example/1',
  };

  it('substitutes the release in every Markdown field, code included', () => {
    const c = renderProductContent(fields, '5.4');
    const all = [c.textHtml, c.instructionsHtml, c.licenseHtml, ...c.faq.map((f) => f.question + f.answerHtml), JSON.stringify(c.changelog)].join('\n');
    assert.doesNotMatch(all, /platformRelease/);
    assert.match(c.textHtml, /<pre><code>https:\/\/dl\.example\/p\/5\.4\n<\/code><\/pre>/);
    assert.match(c.instructionsHtml, /<code>5\.4<\/code>/);
    assert.equal(c.faq[0]?.question, 'Which 5.4?');
    assert.match(c.faq[0]?.answerHtml ?? '', /<pre><code>indented 5\.4/);
    assert.match(c.faq[1]?.answerHtml ?? '', /href="https:\/\/x\.example\/5\.4"/, 'reference links resolve inside answers');
  });

  it('keeps anchors unique across the page and clear of the page ids', () => {
    const c = renderProductContent(fields, '5.4', ['install', 'faq']);
    assert.equal(c.headings[0]?.id, 'install-1');
    assert.equal(c.headings[0]?.level, 2, 'vendor "# " becomes an h2 under the page h1');
    assert.equal(c.faq[1]?.id, 'install-2');
  });

  it('renders the changelog per release and type; the badge is the newest dated, non-yanked release', () => {
    const c = renderProductContent(fields, '5.4');
    assert.deepEqual(c.latest, { version: '1.0.0', date: '2024-01-01' });
    const releases = c.changelog?.releases ?? [];
    assert.deepEqual(releases.map((r) => [r.version, r.id, r.yanked, r.unreleased]), [
      ['Unreleased', 'release-unreleased', false, true],
      ['2.0.0', 'release-2.0.0', true, false],
      ['1.0.0', 'release-1.0.0', false, false],
    ]);
    const v1 = releases[2]!;
    assert.match(v1.summaryHtml, /Summary 5\.4/);
    assert.deepEqual(v1.sections.map((s) => [s.type, s.known]), [['Added', true], ['Custom', false]]);
    assert.match(v1.sections[0]?.itemsHtml[0] ?? '', /^<p><code>5\.4<\/code> support \(<a href="https:\/\/issues\.example\/1" rel="nofollow ugc noopener">#1<\/a>\)<\/p>\n<pre><code>code 5\.4/);
    assert.equal(v1.sections[1]?.itemsHtml[0], 'other', 'one-paragraph items stay tight');
    assert.match(releaseNotesHtml(v1), /<h3>Added<\/h3><ul><li>/);
  });

  it('falls back to plain Markdown for a stored changelog that no longer parses', () => {
    const c = renderProductContent({ name: 'P', changelog: 'no title here\n\n## nonsense' }, null);
    assert.equal(c.changelog, null);
    assert.equal(c.latest, null);
    assert.match(c.changelogHtml, /no title here/);
  });

  it('never throws, never leaves the placeholder and never emits script, whatever the input', () => {
    const piece = fc.constantFrom('{{platformRelease}}', '<script>x</script>', '## ', '# ', '- ', '```\n', '\n', '[a](javascript:x)', '<img src=x onerror=y>', 'text ', '### Added\n', '## [1.0.0] - 2024-01-01\n');
    const doc = fc.array(piece, { maxLength: 30 }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(doc, doc, doc, (text, faq, changelog) => {
        const c = renderProductContent({ name: 'P', text, faq, changelog, instructions: text, license: faq }, '6.1');
        const html = [c.textHtml, c.instructionsHtml, c.licenseHtml, c.changelogHtml, ...c.faq.map((f) => f.answerHtml), ...(c.changelog?.releases ?? []).map(releaseNotesHtml)].join('');
        // As text these are harmless; as markup they are not.
        assert.doesNotMatch(html, /platformRelease|<script|<[^>]*\son\w+=|(?:href|src)="\s*javascript:/i);
      }),
      { numRuns: 300 },
    );
  });
});

describe('versionBadge', () => {
  it('shows the version in the colour, or "no release" in grey; escapes the label', () => {
    const svg = versionBadge('A <b> & "c"', '1.2.0', '#ff8800');
    assert.match(svg, /<title>A &lt;b&gt; &amp; &quot;c&quot;: 1\.2\.0<\/title>/);
    assert.match(svg, /fill="#ff8800"/);
    assert.match(versionBadge('P', null, '#ff8800'), /no release/);
  });
});

describe('rendering work grows linearly with the content', () => {
  /** A changelog of n items, each using its own reference defined at the bottom (a common style). */
  const changelogOf = (n: number) =>
    `# Changelog\n\n## [1.0.0] - 2024-01-01\n\n### Fixed\n\n${Array.from({ length: n }, (_, i) => `- Fixed [#${i}]`).join('\n')}\n\n${Array.from({ length: n }, (_, i) => `[#${i}]: https://issues.example/${i}`).join('\n')}\n`;
  const faqOf = (n: number) =>
    `${Array.from({ length: n }, (_, i) => `## Question ${i}\n\nSee [q${i}].`).join('\n\n')}\n\n${Array.from({ length: n }, (_, i) => `[q${i}]: https://faq.example/${i}`).join('\n')}\n`;

  function workFor(fields: { changelog?: string; faq?: string }): number {
    const before = renderedCharacters();
    const c = renderProductContent({ name: 'P', ...fields }, null);
    // Every reference still resolves in its fragment.
    for (const item of c.changelog?.releases[0]?.sections[0]?.itemsHtml ?? []) assert.match(item, /<a href="https:\/\/issues\.example\/\d+"/);
    for (const entry of c.faq) assert.match(entry.answerHtml, /<a href="https:\/\/faq\.example\/\d+"/);
    return renderedCharacters() - before;
  }

  for (const [field, build] of [['changelog', changelogOf], ['faq', faqOf]] as const) {
    it(`${field}: four times the items and reference definitions is at most about four times the Markdown parsed`, () => {
      const small = workFor({ [field]: build(100) });
      const large = workFor({ [field]: build(400) });
      assert.ok(large <= small * 4.5, `${small} characters parsed for 100 items, ${large} for 400`);
    });
  }
});
