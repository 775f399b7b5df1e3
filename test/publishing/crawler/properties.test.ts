import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseP2Index } from '../../../src/publishing/crawler/p2.js';
import { readKnimeYml, readPythonModule } from '../../../src/publishing/crawler/python-extension.js';
import { parseXml, XmlProblem } from '../../../src/publishing/crawler/xml.js';

// Parsers of vendor files: any input ends in a result or a reported problem, never another throw or a hang.

const pythonish = fc.array(
  fc.constantFrom('@knext.node(', 'knext.category(', 'x = ', 'name=', '"', "'", '"""', '(', ')', ',', '\n', 'class A:', '#', '\\', 'r"', ' ', 'abc', '[', ']'),
  { maxLength: 60 },
).map((parts) => parts.join(''));

test('the Python reader returns for any source, decorators and strings mixed in any order', () => {
  fc.assert(
    fc.property(fc.oneof(pythonish, fc.string({ maxLength: 300 })), (src) => {
      const r = readPythonModule(src, 'x');
      assert.ok(Array.isArray(r.nodes) && Array.isArray(r.categories));
    }),
    { numRuns: 2000 },
  );
  fc.assert(fc.property(fc.string({ maxLength: 300 }), (s) => void readKnimeYml(s)), { numRuns: 500 });
});

test('parseXml returns an element or throws XmlProblem, for any text', () => {
  const xmlish = fc.array(fc.constantFrom('<a>', '</a>', '<b x="1"/>', '<!DOCTYPE a>', '<!ENTITY e "x">', '&amp;', '&e;', 'text', '<![CDATA[x]]>', '<?pi?>', '<', '>', '"'), { maxLength: 30 }).map((p) => p.join(''));
  fc.assert(
    fc.property(fc.oneof(xmlish, fc.string({ maxLength: 200 })), (s) => {
      try {
        const el = parseXml(s, 1_000_000);
        assert.equal(typeof el.name, 'string');
      } catch (e) {
        assert.ok(e instanceof XmlProblem, String(e));
      }
    }),
    { numRuns: 2000 },
  );
});

test('p2.index: the order is kept and stops at "!"', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('content.xml', 'content.xml.xz', 'compositeContent.xml'), { minLength: 1, maxLength: 3 }), (names) => {
      const text = `version=1\nmetadata.repository.factory.order=${names.join(',')},\\!,ignored.xml\n`;
      assert.deepEqual(parseP2Index(text).metadata, names);
    }),
  );
});
