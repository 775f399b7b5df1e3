import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../../src/publishing/crawler/crawl.js';
import { tempDir } from '../../helpers/db.js';
import { buildComposite, buildSite, exampleSpec, PNG, pythonBundle } from '../../helpers/p2-fixtures.js';
import { serveDir } from './serve.js';

const unitList = (r: Awaited<ReturnType<typeof crawlRepository>>) => r.units.map((u) => `${u.id}=${u.version}`).sort();

for (const metadata of ['jar', 'xml', 'xz'] as const) {
  test(`crawls a generated site with content.${metadata === 'jar' ? 'jar' : metadata === 'xz' ? 'xml.xz' : 'xml'}: units, features, nodes in every description generation`, async () => {
    const root = tempDir('pier-crawl-');
    const built = buildSite(path.join(root, 'site'), exampleSpec(metadata));
    const server = await serveDir(root);
    try {
      const r = await crawlRepository(`${server.url}/site/`);
      assert.deepEqual(r.problems.filter((p) => p.severity !== 'warning'), []);
      assert.deepEqual(unitList(r), built.units);
      assert.deepEqual(r.summary, { units: built.units.length, features: 2, bundles: 4, categories: 1, nodes: 4, nodeSets: 1, problems: 0, fatal: false });
      const feature = r.units.find((u) => u.id === 'org.example.feature.feature.group');
      // %key values resolve from the unit's df_LT properties.
      assert.deepEqual(
        { name: feature?.name, description: feature?.description, provider: feature?.provider, license: feature?.license, copyright: feature?.copyright },
        { name: 'Example Nodes', description: 'Nodes that frobnicate widgets.', provider: 'Example Inc.', license: 'Apache-2.0 text', copyright: '(c) 2026 Example' },
      );
      assert.equal(r.units.find((u) => u.id === 'org.example.category')?.kind, 'category');
      // Source bundles and OS fragments are not read for nodes.
      assert.deepEqual(
        r.nodes.map((n) => [n.factoryClass, n.description?.schema, n.categoryNames.join(' / ')]),
        [
          ['org.example.nodes.CsvReaderNodeFactory', 'dtd', 'Community Nodes / Example / Input/Output'],
          ['org.example.nodes.JoinerNodeFactory', 'v2.8', 'Community Nodes / Example'],
          ['org.example.nodes.LearnerNodeFactory', 'v3.1', 'Community Nodes / Example'],
          ['org.example.nodes.PredictorNodeFactory', 'v4.1', 'Community Nodes / Example'],
        ],
      );
      for (const n of r.nodes) {
        const spec = built.nodes.find((s) => s.factoryClass === n.factoryClass)!;
        const d = n.description!;
        assert.equal(d.name, spec.name);
        assert.equal(d.shortDescription, spec.shortDescription);
        assert.equal(d.intro, `<p>${spec.name} intro paragraph.</p><p>Second <b>bold</b> paragraph.</p>`, 'the description keeps its own markup');
        assert.equal(d.markup, 'html');
        assert.deepEqual(d.options, [{ name: 'Fail on error', description: 'Stops on the first error.' }]);
        assert.deepEqual(d.tabs, [{ name: 'Settings', description: 'Main settings.', options: [{ name: 'Column', description: 'The column to use.' }] }]);
        assert.deepEqual(d.inPorts[0], { index: 0, name: 'Input table', description: 'Table to read.', dynamicGroup: null });
        assert.deepEqual(d.outPorts, [{ index: 0, name: 'Output table', description: 'Resulting table.', dynamicGroup: null }]);
        assert.equal(d.inPorts.length, spec.schema === 'v3.1' || spec.schema === 'v4.1' ? 2 : 1);
        assert.deepEqual(d.views, [{ index: 0, name: 'Summary', description: 'A summary view.' }]);
        assert.deepEqual(d.keywords, spec.schema === 'v4.1' ? ['frobnicate', 'widget'] : []);
        assert.equal(n.bundle, 'org.example.nodes');
        assert.equal(n.platforms, null, 'an unfiltered plug-in: every platform');
        assert.deepEqual(n.icon, { contentType: 'image/png', base64: PNG.toString('base64') });
      }
      assert.equal(r.nodes[3]?.description?.inPorts[1]?.dynamicGroup, 'Inputs');
      assert.deepEqual(r.nodeSets, [{ bundle: 'org.example.nodes', factoryClass: 'org.example.nodes.ExampleNodeSetFactory' }]);
      // The top segment is the platform's own (/community, KNIME's "Community Nodes"): named by the
      // platform, not reported as undeclared.
      assert.deepEqual(r.problems.map((p) => [p.code, p.where]), []);
    } finally {
      await server.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
}

test('composite repositories: relative and absolute children, diamonds read once, cycles reported', async () => {
  const root = tempDir('pier-crawl-');
  const a = buildSite(path.join(root, 'a'), exampleSpec('xml', 'org.alpha'));
  const b = buildSite(path.join(root, 'b'), exampleSpec('jar', 'org.beta'));
  const server = await serveDir(root);
  try {
    buildComposite(path.join(root, 'top'), ['../a', `${server.url}/b/`, '../mid']);
    buildComposite(path.join(root, 'mid'), ['../a/', '../top']);
    const r = await crawlRepository(`${server.url}/top/`);
    assert.deepEqual(unitList(r), [...a.units, ...b.units].sort());
    assert.equal(r.nodes.length, 8);
    assert.equal(r.summary.fatal, false);
    const cycles = r.problems.filter((p) => p.code === 'composite_cycle');
    assert.equal(cycles.length, 1, 'met in the metadata and the artifact pass, listed once: ' + JSON.stringify(r.problems));
    assert.match(cycles[0]!.message, /top\/ → .*mid\/ → .*top\//);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('broken variants become problems in the integrity report, never a crash', async () => {
  const root = tempDir('pier-crawl-');
  const spec = exampleSpec('jar');
  const v = '1.0.0';
  const good = spec.bundles[1]!.nodes![0]!;
  spec.bundles.push(
    { id: 'org.broken.missing', version: v, missing: true },
    { id: 'org.broken.checksum', version: v, badChecksum: true },
    { id: 'org.broken.notzip', version: v, rawJar: Buffer.from('this is not a zip') },
    { id: 'org.broken.pluginxml', version: v, rawPluginXml: '<plugin><extension point="x"></plugin>' },
    {
      id: 'org.broken.description',
      version: v,
      nodes: [
        { ...good, factoryClass: 'org.broken.BadXmlNodeFactory', rawDescription: '<knimeNode><name>unclosed</knimeNode>' },
        { ...good, factoryClass: 'org.broken.NoDescNodeFactory', noDescription: true },
      ],
    },
  );
  buildSite(path.join(root, 'site'), spec);
  fs.mkdirSync(path.join(root, 'empty'));
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/site/`);
    const codes = r.problems.map((p) => `${p.code} ${p.where.replace(server.url, '')}`).sort();
    assert.deepEqual(codes, [
      'artifact_missing /site/plugins/org.broken.missing_1.0.0.jar',
      'checksum_mismatch /site/plugins/org.broken.checksum_1.0.0.jar',
      'description_missing org.broken.description_1.0.0.jar!org/broken/NoDescNodeFactory.xml',
      'jar_unreadable /site/plugins/org.broken.notzip_1.0.0.jar',
      'xml_error org.broken.description_1.0.0.jar!org/broken/BadXmlNodeFactory.xml',
      'xml_error org.broken.pluginxml_1.0.0.jar!plugin.xml',
    ]);
    // The good nodes are still indexed, plus the two broken-description nodes without descriptions.
    assert.equal(r.nodes.filter((n) => n.description).length, 4);
    assert.equal(r.nodes.filter((n) => !n.description).length, 2);
    assert.equal(r.summary.fatal, false);

    const none = await crawlRepository(`${server.url}/empty/`);
    assert.equal(none.summary.fatal, true);
    assert.deepEqual(none.problems.map((p) => p.code), ['metadata_unreadable']);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('pure-Python extensions: nodes, categories, ports and docstrings are read statically, never executed', async () => {
  const root = tempDir('pier-crawl-');
  const marker = path.join(root, 'executed');
  const spec = exampleSpec('jar');
  spec.bundles.push(pythonBundle('org.example.py', '1.0.0', marker));
  buildSite(path.join(root, 'site'), spec);
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/site/`);
    const py = r.nodes.filter((n) => n.bundle === 'org.example.py');
    assert.deepEqual(
      py.map((n) => [n.factoryClass, n.categoryNames.join(' / '), n.description?.name, n.description?.nodeType, n.description?.shortDescription]),
      [
        ['org.example.py.gizmos.GizmoCounter', 'Community Nodes / Python Demo', 'Gizmo Counter', 'SINK', 'Counts gizmos.'],
        ['org.example.py.gizmos.GizmoScaler', 'Community Nodes / Python Demo', 'Gizmo Scaler', 'MANIPULATOR', 'Scales gizmos by a factor.'],
      ],
    );
    const scaler = py[1]!.description!;
    assert.equal(scaler.intro, 'Multiplies every numeric column by the factor,\nkeeping (parentheses, "quotes") intact.');
    assert.deepEqual(scaler.inPorts, [{ index: 0, name: 'Input table', description: 'Gizmos to scale.', dynamicGroup: null }]);
    assert.deepEqual(scaler.outPorts, [{ index: 0, name: 'Scaled table', description: 'The scaled gizmos.', dynamicGroup: null }]);
    assert.deepEqual(py[1]!.icon, { contentType: 'image/png', base64: PNG.toString('base64') });
    assert.deepEqual(py[0]!.description!.inPorts.map((p) => p.name), ['Counted table']);
    const cat = r.categories.find((c) => c.levelId === 'pydemo');
    assert.deepEqual([cat?.name, cat?.description, cat?.fullPath], ['Python Demo', 'Nodes written in Python', '/community/pydemo']);
    assert.equal(fs.existsSync(marker), false, 'vendor code never ran');
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('pure-Python extensions: a folder listed many times is read once, and a crawl reads Python modules within a budget', async () => {
  const root = tempDir('pier-crawl-');
  const marker = path.join(root, 'executed');
  const spec = exampleSpec('jar');
  const repeated = pythonBundle('org.example.py', '1.0.0', marker);
  const entry = '    <PythonExtension ExtensionPath="python/src" />\n    <PythonExtension ExtensionPath="./python/src/" />\n';
  repeated.rawPluginXml = repeated.rawPluginXml!.replace(/ {4}<PythonExtension [^\n]*\n/, entry.repeat(16));
  const other = pythonBundle('org.example.py2', '1.0.0', marker);
  const yml = new TextDecoder().decode(other.extraEntries!['python/src/knime.yml']);
  other.extraEntries!['python/src/knime.yml'] = new TextEncoder().encode(yml.replace('group_id: org.example.py', 'group_id: org.example.other'));
  spec.bundles.push(repeated, other);
  buildSite(path.join(root, 'site'), spec);
  const server = await serveDir(root);
  try {
    const r = await crawlRepository(`${server.url}/site/`);
    assert.deepEqual(r.problems.filter((p) => p.code !== 'category_undeclared'), []);
    // Listed 32 times, two nodes: read once.
    assert.deepEqual(r.nodes.filter((n) => n.bundle === 'org.example.py').map((n) => n.factoryClass), ['org.example.py.gizmos.GizmoCounter', 'org.example.py.gizmos.GizmoScaler']);
    assert.equal(r.nodes.filter((n) => n.bundle === 'org.example.py2').length, 2);
    // A budget for one module: the second bundle's module is not read, and the crawl says so.
    const module = repeated.extraEntries!['python/src/gizmo_ext.py']!.length;
    const tight = await crawlRepository(`${server.url}/site/`, { ...DEFAULT_CRAWL_LIMITS, maxPythonCharacters: module + 10 });
    assert.equal(tight.nodes.filter((n) => n.bundle.startsWith('org.example.py')).length, 2);
    const over = tight.problems.filter((p) => p.code === 'crawl_limit_exceeded');
    assert.equal(over.length, 1, JSON.stringify(tight.problems));
    assert.match(over[0]!.message, /gizmo_ext\.py not read: this crawl already read \d+ characters of Python modules/);
    assert.equal(fs.existsSync(marker), false, 'vendor code never ran');
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});
