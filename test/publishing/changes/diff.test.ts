/**
 * The diff of node sets (changes/diff.ts) and the signature it compares (changes/signature.ts):
 * properties over generated node sets, and the words the page shows for each kind of change.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { describeChange, diffNodes, type NodesDiff } from '../../../src/publishing/changes/diff.js';
import { type NodeSignature, signatureOfRow, signaturesOf } from '../../../src/publishing/changes/signature.js';
import { parseSide } from '../../../src/publishing/changes/service.js';

const short = fc.constantFrom('Table', 'Model', 'Port', 'Data', 'Settings', 'Advanced', 'X', 'Äpfel', '');
const port = (group: boolean) =>
  fc.record({ index: group ? fc.constant(null) : fc.nat({ max: 3 }), name: short, type: fc.option(short.filter((s) => s !== ''), { nil: null }), group: group ? short : fc.constant(null) });
const ports = fc
  .tuple(fc.uniqueArray(port(false), { selector: (p) => p.index, maxLength: 3 }), fc.uniqueArray(port(true), { selector: (p) => p.group, maxLength: 2 }))
  .map(([a, b]) => [...a, ...b]);
const signature = (factoryClass: string): fc.Arbitrary<NodeSignature> =>
  fc.record({
    factoryClass: fc.constant(factoryClass),
    name: short,
    categoryNames: fc.array(short, { maxLength: 2 }),
    deprecated: fc.boolean(),
    inPorts: ports,
    outPorts: ports,
    options: fc.array(fc.record({ tab: fc.option(short, { nil: null }), names: fc.uniqueArray(short, { maxLength: 3 }) }), { maxLength: 2 }),
    descriptionHash: fc.option(fc.constantFrom('h1', 'h2'), { nil: null }),
  });
/** A node set: unique factory classes from a small pool, so two sets share some. */
const nodeSet = fc
  .uniqueArray(fc.constantFrom('a.A', 'a.B', 'a.C', 'b.D', 'b.E', 'c.F'), { maxLength: 6 })
  .chain((classes) => fc.tuple(...classes.map(signature)) as fc.Arbitrary<NodeSignature[]>);

const keys = (d: NodesDiff) => ({
  added: d.added.map((n) => n.factoryClass).sort(),
  removed: d.removed.map((n) => n.factoryClass).sort(),
  common: [...d.deprecated, ...d.changed].map((n) => n.factoryClass).sort(),
});

test('diff(a, a) is empty: every node unchanged', () => {
  fc.assert(
    fc.property(nodeSet, (a) => {
      const d = diffNodes(a, a);
      assert.deepEqual([d.added, d.removed, d.deprecated, d.changed], [[], [], [], []]);
      assert.equal(d.unchanged, a.length);
    }),
    { numRuns: 500 },
  );
});

test('swapping the sides swaps added and removed; the changed nodes are the same both ways', () => {
  fc.assert(
    fc.property(nodeSet, nodeSet, (a, b) => {
      const ab = keys(diffNodes(a, b));
      const ba = keys(diffNodes(b, a));
      assert.deepEqual(ab.added, ba.removed);
      assert.deepEqual(ab.removed, ba.added);
      assert.deepEqual(ab.common, ba.common);
      assert.equal(diffNodes(a, b).unchanged, diffNodes(b, a).unchanged);
    }),
    { numRuns: 500 },
  );
});

test('every node of either side lands in exactly one bucket (or counts as unchanged), each bucket as it says', () => {
  fc.assert(
    fc.property(nodeSet, nodeSet, (a, b) => {
      const d = diffNodes(a, b);
      const all = [...d.added, ...d.removed, ...d.deprecated, ...d.changed].map((n) => n.factoryClass);
      assert.equal(new Set(all).size, all.length, 'no node in two buckets');
      const union = new Set([...a, ...b].map((n) => n.factoryClass));
      assert.equal(all.length + d.unchanged, union.size);
      const inA = new Set(a.map((n) => n.factoryClass));
      const inB = new Set(b.map((n) => n.factoryClass));
      for (const n of d.added) assert.ok(inB.has(n.factoryClass) && !inA.has(n.factoryClass));
      for (const n of d.removed) assert.ok(inA.has(n.factoryClass) && !inB.has(n.factoryClass));
      for (const n of d.deprecated) {
        assert.ok(n.deprecated && !a.find((x) => x.factoryClass === n.factoryClass)!.deprecated);
      }
      for (const n of d.changed) assert.ok(n.changes.length > 0);
      for (const n of [...d.deprecated, ...d.changed]) for (const c of n.changes) assert.ok(describeChange(c).length > 0);
    }),
    { numRuns: 500 },
  );
});

const base: NodeSignature = {
  factoryClass: 'org.example.nodes.JoinerNodeFactory',
  name: 'Joiner',
  categoryNames: ['Example', 'Manipulation'],
  deprecated: false,
  inPorts: [
    { index: 0, name: 'Left table', type: 'Table', group: null },
    { index: 1, name: 'Right table', type: 'Table', group: null },
  ],
  outPorts: [{ index: 0, name: 'Joined', type: 'Table', group: null }],
  options: [
    { tab: null, names: ['Fail on error'] },
    { tab: 'Settings', names: ['Column', 'Mode'] },
  ],
  descriptionHash: 'h1',
};

test('each kind of change is named, in the words the page shows', () => {
  const next: NodeSignature = {
    ...base,
    name: 'Widget Joiner',
    categoryNames: ['Example'],
    inPorts: [
      { index: 0, name: 'Left table', type: 'Table', group: null },
      { index: 1, name: 'Right model', type: 'Model', group: null },
      { index: null, name: 'More tables', type: null, group: 'Inputs' },
    ],
    outPorts: [],
    options: [
      { tab: 'Settings', names: ['Column', 'Fail on error'] },
      { tab: 'Advanced', names: ['Threads'] },
    ],
    descriptionHash: 'h2',
  };
  const d = diffNodes([base], [next]);
  assert.equal(d.changed.length, 1);
  assert.deepEqual(d.changed[0]!.changes.map(describeChange), [
    'Renamed: Joiner → Widget Joiner',
    'Category: Example / Manipulation → Example',
    'Input port 2: Table → Model',
    'Dynamic input ports “Inputs” added: More tables',
    'Output port 1 removed: Joined (Table)',
    'Option “Fail on error” moved from outside tabs to tab “Settings”',
    'Option “Mode” removed (tab “Settings”)',
    'Option “Threads” added (tab “Advanced”)',
    'Description text changed',
  ]);
  // Without port types (descriptions do not carry them), a port is compared by its name.
  const untyped = (s: NodeSignature): NodeSignature => ({ ...s, inPorts: s.inPorts.map((p) => ({ ...p, type: null })) });
  const renamed = diffNodes([untyped(base)], [untyped({ ...base, inPorts: [base.inPorts[0]!, { ...base.inPorts[1]!, name: 'Model' }] })]);
  assert.deepEqual(renamed.changed[0]!.changes.map(describeChange), ['Input port 2: Right table → Model']);
  // Deprecation is its own bucket, with whatever else changed; the way back is a change.
  const dep = diffNodes([base], [{ ...base, deprecated: true, descriptionHash: 'h2' }]);
  assert.deepEqual([dep.deprecated.length, dep.changed.length], [1, 0]);
  assert.deepEqual(dep.deprecated[0]!.changes.map(describeChange), ['Description text changed']);
  const back = diffNodes([{ ...base, deprecated: true }], [base]);
  assert.deepEqual(back.changed[0]!.changes.map(describeChange), ['No longer deprecated']);
});

test('signatures of crawled rows: ports with positions and groups, options by tab, a description hash blind to names and markup flags', () => {
  const description = {
    name: 'Widget Joiner',
    shortDescription: 'Joins.',
    intro: '<p>Intro</p>',
    options: [{ name: 'Fail on error', description: 'Stops.' }],
    tabs: [{ name: 'Settings', description: 'Main.', options: [{ name: 'Column', description: 'Which.' }] }],
    inPorts: [
      { index: 0, name: 'Input table', description: 'Table to read.', dynamicGroup: null },
      { index: null, name: 'Additional tables', description: 'More.', dynamicGroup: 'Inputs' },
    ],
    outPorts: [{ index: 0, name: 'Output table', description: 'Result.', dynamicGroup: null }],
    views: [],
    keywords: ['widget'],
    schema: 'v4.1',
    markup: 'html',
  };
  const row = { factory_class: 'x.JoinerNodeFactory', name: 'Widget Joiner', deprecated: 0, data: JSON.stringify({ categoryNames: ['Example'], description }) };
  const s = signatureOfRow(row);
  assert.deepEqual(s.inPorts, [
    { index: 0, name: 'Input table', type: null, group: null },
    { index: null, name: 'Additional tables', type: null, group: 'Inputs' },
  ]);
  assert.deepEqual(s.options, [
    { tab: null, names: ['Fail on error'] },
    { tab: 'Settings', names: ['Column'] },
  ]);
  assert.equal(s.categoryNames[0], 'Example');
  const same = signatureOfRow({ ...row, data: JSON.stringify({ categoryNames: ['Example'], description: { ...description, schema: 'dtd', markup: undefined } }) });
  assert.equal(same.descriptionHash, s.descriptionHash, 'the schema generation is not the text');
  const edited = signatureOfRow({ ...row, data: JSON.stringify({ categoryNames: ['Example'], description: { ...description, intro: '<p>New intro</p>' } }) });
  assert.notEqual(edited.descriptionHash, s.descriptionHash);
  // An option's edited text is a description change; a new option's text is only its addition.
  const withData = (d: object) => signatureOfRow({ ...row, data: JSON.stringify({ categoryNames: ['Example'], description: { ...description, ...d } }) });
  const reworded = withData({ options: [{ name: 'Fail on error', description: 'Stops at once.' }] });
  assert.deepEqual(diffNodes([s], [reworded]).changed[0]!.changes.map(describeChange), ['Description text changed']);
  const grown = withData({ options: [...description.options, { name: 'Threads', description: 'How many.' }] });
  assert.deepEqual(diffNodes([s], [grown]).changed[0]!.changes.map(describeChange), ['Option “Threads” added (outside tabs)']);
  const portText = withData({ outPorts: [{ index: 0, name: 'Output table', description: 'Other result.', dynamicGroup: null }] });
  assert.deepEqual(diffNodes([s], [portText]).changed[0]!.changes.map(describeChange), ['Description text changed']);
  // A row without a description, or whose data is not JSON, still has a signature.
  assert.deepEqual(signatureOfRow({ ...row, data: '{' }).inPorts, []);
  assert.equal(signatureOfRow({ ...row, data: JSON.stringify({ description: null }) }).descriptionHash, null);
  assert.deepEqual(
    signaturesOf([{ ...row, factory_class: 'b' }, { ...row, factory_class: 'a' }]).map((x) => x.factoryClass),
    ['a', 'b'],
  );
});

test('parseSide: a label or <label>@<n>; anything else is refused naming the parameter', () => {
  assert.deepEqual(parseSide('to', '5.4'), { label: '5.4', release: null });
  assert.deepEqual(parseSide('from', '5.4@12'), { label: '5.4', release: 12 });
  for (const bad of ['', '..', '../5.4', '5.4@0', '5.4@01', '5.4@', '@3', '5.4@1@2', 'a/b', 'ä', '5.4\u0000', `${'x'.repeat(129)}`, '5.4@1234567890', ' 5.4']) {
    assert.throws(
      () => parseSide('from', bad),
      (e: { status?: number; errors?: { field: string }[] }) => e.status === 400 && e.errors?.[0]?.field === 'from',
      JSON.stringify(bad),
    );
  }
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (s) => {
      try {
        const r = parseSide('to', s);
        assert.ok(/^[A-Za-z0-9._-]+$/.test(r.label) && (r.release === null || r.release >= 1));
      } catch (e) {
        assert.equal((e as { status?: number }).status, 400);
      }
    }),
    { numRuns: 2000 },
  );
});
