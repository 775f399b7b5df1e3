import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { sanitizeNodeMarkup } from '../../../src/publishing/content/node-markup.js';
import { markupOf } from '../../../src/publishing/crawler/description-markup.js';
import { readNodeDescription } from '../../../src/publishing/crawler/node-description.js';
import { parseXml, type XmlElement } from '../../../src/publishing/crawler/xml.js';

const root = (inner: string) => parseXml(`<intro>${inner}</intro>`, 1 << 20);

test('a description keeps its own markup: lists, links, emphasis, code, tables', () => {
  const html = markupOf(
    root(`
    <p>Reads <b>widgets</b> and <i>gizmos</i>,
       see <a href="https://example.com/docs?a=1&amp;b=2">the docs</a>.</p>
    <ul>
      <li>first <tt>code</tt></li>
      <li>second<br/>line</li>
    </ul>
    <ol><li>one</li></ol>
    <h3>Details</h3>
    <pre>  keep
    layout</pre>
    <table><tr><th>k</th><td>v<sup>2</sup><sub>i</sub><u>u</u></td></tr></table>`),
  );
  assert.equal(
    html,
    '<p>Reads <b>widgets</b> and <i>gizmos</i>, see <a href="https://example.com/docs?a=1&amp;b=2">the docs</a>.</p> ' +
      '<ul> <li>first <code>code</code></li> <li>second<br />line</li> </ul> <ol><li>one</li></ol> <h4>Details</h4> ' +
      '<pre>  keep\n    layout</pre> <table><tr><th>k</th><td>v<sup>2</sup><sub>i</sub><u>u</u></td></tr></table>',
  );
});

test('source line breaks inside a paragraph are XML layout: one paragraph, not one per line', () => {
  assert.equal(markupOf(root('<p>one\n  two\n\n  three</p>')), '<p>one two three</p>');
  assert.equal(markupOf(root('plain\n text')), 'plain text');
});

test('hostile markup: only the vocabulary is written, links must be absolute http(s) or mailto, text is escaped', () => {
  const html = markupOf(
    root(
      '<script>alert(1)</script><img src="x" onerror="alert(2)"/><a href="javascript:alert(3)">js</a>' +
        '<a href="/relative">rel</a><p onclick="alert(4)" style="x">p</p>&lt;img src=x onerror=alert(5)&gt;' +
        '<a href="mailto:a@example.com">mail</a><iframe src="https://evil.example"/>',
    ),
  );
  assert.equal(html, 'alert(1)jsrel<p>p</p>&lt;img src=x onerror=alert(5)&gt;<a href="mailto:a@example.com">mail</a>');
  assert.equal(sanitizeNodeMarkup(html), 'alert(1)jsrel<p>p</p>&lt;img src=x onerror=alert(5)&gt;<a href="mailto:a@example.com" rel="nofollow ugc noopener">mail</a>');
});

test('the sanitizer on the way out removes what a stored description should never hold', () => {
  assert.equal(sanitizeNodeMarkup('<p onclick="x">a</p><script>alert(1)</script><a href="javascript:x">b</a>'), '<p>a</p>&lt;script&gt;alert(1)&lt;/script&gt;<a rel="nofollow ugc noopener">b</a>');
});

test('every schema generation reads markup into intro, options, tabs, ports and views', () => {
  const xml = `<?xml version="1.0"?><knimeNode xmlns="http://knime.org/node/v4.1" type="Manipulator"><name>N</name>
    <shortDescription>Short <b>one</b>.</shortDescription>
    <fullDescription><intro><p>Intro <a href="https://x.example">link</a></p></intro>
      <tab name="T"><description><ul><li>a</li></ul></description><option name="O">Use <tt>x</tt>.</option></tab>
      <option name="P">Top <i>level</i>.</option></fullDescription>
    <ports><inPort index="0" name="In">In <b>table</b>.</inPort><dynOutPort name="D" group-identifier="G" insert-before="0">Dyn <i>ports</i>.</dynOutPort></ports>
    <views><view index="0" name="V">View <u>it</u>.</view></views></knimeNode>`;
  const d = readNodeDescription(parseXml(xml, 1 << 20), xml);
  assert.equal(d.markup, 'html');
  assert.equal(d.shortDescription, 'Short one.', 'the short description stays text (search and cards)');
  assert.equal(d.intro, '<p>Intro <a href="https://x.example/">link</a></p>');
  assert.deepEqual(d.tabs, [{ name: 'T', description: '<ul><li>a</li></ul>', options: [{ name: 'O', description: 'Use <code>x</code>.' }] }]);
  assert.deepEqual(d.options, [{ name: 'P', description: 'Top <i>level</i>.' }]);
  assert.equal(d.inPorts[0]?.description, 'In <b>table</b>.');
  assert.equal(d.outPorts[0]?.description, 'Dyn <i>ports</i>.');
  assert.equal(d.views[0]?.description, 'View <u>it</u>.');
});

const names = fc.constantFrom('p', 'b', 'i', 'a', 'ul', 'li', 'pre', 'br', 'tt', 'script', 'img', 'iframe', 'style', 'svg', 'div', 'h3', 'table', 'td');
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', 'javascript:alert(1)', '&amp;', '  \n  '));
const attrs = fc.dictionary(fc.constantFrom('href', 'onclick', 'onerror', 'style', 'src', 'class', 'id'), fc.constantFrom('javascript:alert(1)', 'https://ok.example/', 'x" onload="alert(1)', '/rel', 'data:text/html,<script>'), { maxKeys: 3 });
const tree: fc.Arbitrary<XmlElement> = fc.letrec<{ el: XmlElement }>((tie) => ({
  el: fc.record({ name: names, attrs, children: fc.array(fc.oneof({ depthSize: 'small' }, text, tie('el')), { maxLength: 4 }) }),
})).el;

const ALLOWED = new Set(['p', 'div', 'br', 'ul', 'ol', 'li', 'a', 'b', 'strong', 'i', 'em', 'u', 'code', 'pre', 'sup', 'sub', 'h4', 'h5', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'hr', 'dl', 'dt', 'dd']);
const textOfTree = (e: XmlElement): string => e.children.map((c) => (typeof c === 'string' ? c : textOfTree(c))).join('');
const decode = (s: string) => s.replace(/<[^>]*>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&amp;/g, '&');

test('property: whatever the XML, the output holds only the vocabulary, no hostile attribute, and every word of the text', () => {
  fc.assert(
    fc.property(tree, (t) => {
      const html = markupOf({ name: 'intro', attrs: {}, children: [t] });
      // Hostile words may appear as text; never as a tag or inside one.
      assert.doesNotMatch(html, /<(script|img|iframe|style|svg)|<[^>]*(\son\w+=|javascript:|data:)/i);
      assert.deepEqual([...new Set([...html.matchAll(/<\/?([a-z0-9]+)/g)].map((m) => m[1]))].filter((tag) => !ALLOWED.has(tag!)), []);
      const sanitized = sanitizeNodeMarkup(html);
      const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();
      if (!/pre/.test(JSON.stringify(t))) {
        assert.equal(collapse(decode(html)), collapse(textOfTree(t)));
        assert.equal(collapse(decode(sanitized)), collapse(textOfTree(t)), 'the sanitizer keeps all of it');
      }
    }),
  );
});
