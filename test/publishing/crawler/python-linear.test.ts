import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { readKnimeYml, readPythonModule } from '../../../src/publishing/crawler/python-extension.js';

// The pure-Python reader runs over sources of up to 4 MiB: its work must grow linearly with the
// source, whatever the source repeats. Work is counted in steps (characters and tokens visited),
// not measured in time, so the check does not depend on the machine.

const steps = (src: string) => {
  const meter = { steps: 0 };
  readPythonModule(src, 'x', meter);
  return meter.steps;
};

const fragment = fc.constantFrom(
  '@knext.node((',
  '@knext.node(',
  '\n@knext.node((',
  '\n@knext.node(name=',
  '\n    @knext.input_table(',
  'x = knext.category(',
  '\nc = knext.category(path=c, level_id="a", ',
  '\nclass A:\n  """',
  '"""',
  "'''",
  '"',
  "'",
  'r"\\',
  '\\',
  '(',
  ')',
  '[',
  '{',
  ',',
  '#',
  '\n',
  ' ',
  'name=',
  'abc',
);

// A call's arguments are read up to a fixed count (200) and look-aheads are bounded, so the work
// per character has a constant ceiling; it is reached only once a call's 200 arguments are all
// there (a few hundred repeats), so the check is that ceiling at every size, not a ratio of two
// small sizes.
const STEPS_PER_CHARACTER = 64;

test('readPythonModule: the work for repeat(x, n) stays under a constant number of steps per character, for any x', () => {
  fc.assert(
    fc.property(fc.array(fragment, { minLength: 1, maxLength: 6 }).map((p) => p.join('')), fc.integer({ min: 20, max: 60 }), (x, n) => {
      for (const times of [n, 10 * n]) {
        const src = x.repeat(times);
        const work = steps(src);
        assert.ok(work <= STEPS_PER_CHARACTER * src.length + 1000, `${JSON.stringify(x)} × ${times}: ${work} steps for ${src.length} characters`);
      }
    }),
    { numRuns: 300 },
  );
});

test('readPythonModule: the slowest repeated shapes found stay at the ceiling far past where it is reached', () => {
  for (const x of [')\n@knext.node("""', '@knext.node((', '\n@knext.node(name=', '(\n@knext.node("', '@knext.node(a,']) {
    const src = x.repeat(20_000);
    const work = steps(src);
    assert.ok(work <= STEPS_PER_CHARACTER * src.length + 1000, `${JSON.stringify(x)}: ${work} steps for ${src.length} characters`);
  }
});

test('readPythonModule: 4 MiB of "@knext.node((" lines, the size cap, is read in linear work', () => {
  const src = '@knext.node((\n'.repeat(300_000);
  const meter = { steps: 0 };
  const r = readPythonModule(src, 'x', meter);
  assert.deepEqual(r.nodes, []);
  assert.ok(meter.steps <= 40 * src.length, `${meter.steps} steps for ${src.length} characters`);
});

test('a decorator inside a string or a comment is not a node; a real one still is', () => {
  const src = [
    'import knext',
    'doc = """',
    '@knext.node(name="Fake", node_type=knext.NodeType.SINK, icon_path="i.png", category="/")',
    'class Fake:',
    '    """No."""',
    '"""',
    '# @knext.node(name="Commented", node_type=knext.NodeType.SINK, icon_path="i.png", category="/")',
    '@knext.node(name="Real", node_type=knext.NodeType.SOURCE, icon_path="i.png", category="/")',
    '@knext.output_table(name="Out", description="The (only) table")',
    'class Real:',
    '    """Real node.',
    '',
    '    Longer text."""',
  ].join('\n');
  const r = readPythonModule(src, 'x');
  assert.deepEqual(
    r.nodes.map((n) => [n.id, n.description.name, n.description.nodeType, n.description.shortDescription, n.description.intro, n.description.outPorts.map((p) => p.description)]),
    [['x.Real', 'Real', 'SOURCE', 'Real node.', 'Longer text.', ['The (only) table']]],
  );
});

test('readKnimeYml: linear for long runs of spaces, values trimmed and comments dropped', () => {
  assert.deepEqual(readKnimeYml('name: demo   # the name\ngroup_id: "org.x"\nversion:   1.0  \n'), { name: 'demo', group_id: 'org.x', version: '1.0' });
  const long = `name: a${' '.repeat(2_000_000)}b\n`;
  assert.equal(readKnimeYml(long).name?.length, 2_000_002);
});
