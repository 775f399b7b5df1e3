import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import GithubSlugger from 'github-slugger';
import {
  createMarkdown,
  findRelativeLinks,
  linkReferences,
  renderMarkdown,
  stripHtmlComments,
} from '../../../src/publishing/content/markdown.js';

describe('renderMarkdown', () => {
  it('gives headings unique github-slugger ids and lists them', () => {
    const { html, headings } = renderMarkdown('# Getting started\n## Install\n## Install\n### `code` & *stuff*\n## 🎉');
    assert.deepEqual(headings, [
      { level: 1, text: 'Getting started', id: 'getting-started' },
      { level: 2, text: 'Install', id: 'install' },
      { level: 2, text: 'Install', id: 'install-1' },
      { level: 3, text: 'code & stuff', id: 'code--stuff' },
      { level: 2, text: '🎉', id: 'section' },
    ]);
    assert.match(html, /<h2 id="install-1">Install<\/h2>/);
  });

  it('is stable across calls and can share a slugger across documents', () => {
    assert.deepEqual(renderMarkdown('## A').headings, renderMarkdown('## A').headings);
    const slugger = new GithubSlugger();
    renderMarkdown('## Usage', { slugger });
    assert.equal(renderMarkdown('## Usage', { slugger }).headings[0]?.id, 'usage-1');
  });

  it('passes vendor HTML only through the allowlist, never scripts or unsafe URLs', () => {
    const { html } = renderMarkdown([
      '<script>alert(1)</script>',
      '<img src=x onerror=alert(1)>',
      '[js](javascript:alert(1)) [vb](vbscript:x) [ok](https://example.com "T") [mail](mailto:a@b.example) [top](#top)',
      '![data](data:image/png;base64,AAAA) ![pic](https://example.com/a.png)',
      '<iframe src="https://evil.example"></iframe><style>body{}</style><form action="https://evil.example"><input name=a></form>',
      '<details open><summary>More</summary><kbd>Ctrl</kbd> <a href="https://x.example" target="_blank" onclick="x()" style="position:fixed">x</a></details>',
      '<div style="position:fixed;inset:0">cover</div><svg onload=alert(1)><circle/></svg>',
    ].join('\n\n'));
    assert.doesNotMatch(html, /<script|<iframe|<style|<form|<input|<svg|onerror|onclick|onload|target=|style=|href="(?:javascript|vbscript)|src="data:/i);
    assert.doesNotMatch(html, /alert\(1\)<|body\{\}/);
    assert.match(html, /<img alt="data" loading="lazy" \/>/);
    assert.match(html, /<a href="https:\/\/example\.com" title="T" rel="nofollow ugc noopener">ok<\/a>/);
    assert.match(html, /<a href="mailto:a@b\.example" rel="nofollow ugc noopener">mail<\/a>/);
    assert.match(html, /<a href="#top">top<\/a>/);
    assert.match(html, /<img src="https:\/\/example\.com\/a\.png" alt="pic" loading="lazy" \/>/);
    assert.match(html, /<details open><summary>More<\/summary><kbd>Ctrl<\/kbd> <a href="https:\/\/x\.example" rel="nofollow ugc noopener">x<\/a><\/details>/);
    assert.match(html, /<div>cover<\/div>/);
  });

  it('keeps only the heading ids it generated, never ids from raw HTML', () => {
    const { html } = renderMarkdown('## Real\n\n<h2 id="install">Fake</h2>\n\n<h3 id="real">Clash</h3>');
    assert.match(html, /<h2 id="real">Real<\/h2>/);
    assert.match(html, /<h2>Fake<\/h2>/);
    assert.doesNotMatch(html, /id="install"/);
    assert.match(html, /<h3>Clash<\/h3>/);
    assert.doesNotMatch(renderMarkdown('<h2 data-pier-x="a">x</h2>').html, /data-pier|id=/);
  });

  it('shifts heading levels by the offset, capped at h6', () => {
    const { html, headings } = renderMarkdown('# A\n##### B\n###### C', { headingOffset: 1 });
    assert.match(html, /<h2 id="a">A<\/h2>\n<h6 id="b">B<\/h6>\n<h6 id="c">C<\/h6>/);
    assert.deepEqual(headings.map((h) => h.level), [2, 6, 6]);
  });

  it('linkifies bare URLs, keeps code classes and table alignment, hides comments', () => {
    const { html } = renderMarkdown('See www.example.com <!-- secret -->\n\n```js\nx\n```\n\n| a |\n|--:|\n| 1 |');
    assert.match(html, /<a href="http:\/\/www\.example\.com" rel="nofollow ugc noopener">www\.example\.com<\/a>/);
    assert.match(html, /<code class="language-js">/);
    assert.match(html, /<th style="text-align:right">a<\/th>/);
    assert.doesNotMatch(html, /secret/);
  });

  it('createMarkdown sets heading ids on its own', () => {
    assert.equal(createMarkdown().render('# Hi'), '<h1 id="hi">Hi</h1>\n');
  });
});

describe('findRelativeLinks', () => {
  it('reports non-absolute link and image targets with their own line', () => {
    const src = [
      'Intro [rel](./docs/a.md) and [abs](https://example.com)', // 1
      'second line ![img](images/x.png)', //                        2
      'third [frag](#install) [mail](mailto:x@y.example)', //        3
      '',
      '| col |', //                                                  5
      '|-----|',
      '| [cell](cell.html) |', //                                    7
      '',
      '- item [proto](//cdn.example/x.js)', //                       9
      '- [ftp](ftp://host/file) <https://auto.example> [empty]()', // 10
      '',
      'Uses [a reference][ref].', //                                  12
      '',
      '[ref]: ../up.html',
    ].join('\n');
    assert.deepEqual(findRelativeLinks(src), [
      { line: 1, href: './docs/a.md' },
      { line: 2, href: 'images/x.png' },
      { line: 7, href: 'cell.html' },
      { line: 9, href: '//cdn.example/x.js' },
      { line: 10, href: 'ftp://host/file' },
      { line: 10, href: '' },
      { line: 12, href: '../up.html' },
    ]);
  });

  it('ignores code and HTML comments, and keeps lines after a multi-line comment', () => {
    const src = '```\n[a](./in-code)\n```\n`[b](./inline-code)`\n<!--\n[c](./commented)\n-->\n[d](./real)';
    assert.deepEqual(findRelativeLinks(src), [{ line: 8, href: './real' }]);
  });

  it('finds links inside headings, quotes and nested lists', () => {
    const src = '## [h](h.md)\n> [q](q.md)\n- a\n  - [n](n.md)';
    assert.deepEqual(findRelativeLinks(src), [{ line: 1, href: 'h.md' }, { line: 2, href: 'q.md' }, { line: 4, href: 'n.md' }]);
  });
});

describe('stripHtmlComments', () => {
  it('removes single- and multi-line comments but keeps every newline', () => {
    const src = 'a <!-- one --> b\n<!--\nline 2\nline 3\n-->\nc';
    const out = stripHtmlComments(src);
    assert.equal(out, 'a  b\n\n\n\n\nc');
    assert.equal(out.split('\n').length, src.split('\n').length);
  });

  it('keeps comments that are code, and handles empty and unterminated comments', () => {
    assert.equal(stripHtmlComments('```xml\n<!-- keep -->\n```\n    <!-- indented code -->'), '```xml\n<!-- keep -->\n```\n    <!-- indented code -->');
    assert.equal(stripHtmlComments('a<!-->b<!--->c'), 'abc');
    assert.equal(stripHtmlComments('a\n<!-- open\nb\nc'), 'a\n\n\n');
    assert.equal(stripHtmlComments('x\r\n<!--\r\n-->y'), 'x\n\ny');
  });

  it('does not let a fence written inside a comment swallow the rest', () => {
    assert.equal(stripHtmlComments('<!--\n```\n-->\n<!-- gone -->\nz'), '\n\n\n\nz');
  });
});

describe('linkReferences', () => {
  it('collects the definitions so fragments can be rendered on their own', () => {
    const refs = linkReferences('- Fixed ([#12])\n\n[#12]: https://example.com/issues/12 "Issue 12"\n<!-- [x]: https://hidden.example -->');
    assert.deepEqual(Object.keys(refs), ['#12']);
    assert.match(renderMarkdown('Fixed ([#12])', { references: refs }).html, /<a href="https:\/\/example\.com\/issues\/12" title="Issue 12"/);
    assert.doesNotMatch(renderMarkdown('[x] and [toString] and [__proto__]', { references: refs }).html, /<a/);
  });

  it('a definition inside one fragment does not leak into the next', () => {
    const refs = linkReferences('[a]: https://a.example');
    assert.match(renderMarkdown('[b]\n\n[b]: https://b.example', { references: refs }).html, /b\.example/);
    assert.doesNotMatch(renderMarkdown('[b]', { references: refs }).html, /<a/);
  });
});
