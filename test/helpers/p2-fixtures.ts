/**
 * Builds P2 update sites by code (no checked-in binaries): features, categories, Java node
 * bundles whose plugin.xml declares nodes, categories and node sets, node descriptions in every
 * schema generation, composites, and broken variants. Jars are zipped in memory with fflate so
 * tests can also write entries no zip tool would (traversal names, bombs).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { zipSync } from 'fflate';

export type DescriptionSchema = 'dtd' | 'v2.8' | 'v3.1' | 'v4.1';

export interface NodeSpec {
  factoryClass: string;
  categoryPath: string;
  name: string;
  shortDescription: string;
  schema: DescriptionSchema;
  deprecated?: boolean;
  hidden?: boolean;
  /** Leave the description out of the jar. */
  noDescription?: boolean;
  /** Replace the description XML verbatim. */
  rawDescription?: string;
}

export interface CategorySpec {
  path: string;
  levelId: string;
  name: string;
  description?: string;
}

export interface BundleSpec {
  id: string;
  version: string;
  nodes?: NodeSpec[];
  categories?: CategorySpec[];
  nodeSets?: string[];
  /** A platform filter (`<filter>` of the unit): a fragment with one is never read for nodes, a plug-in is. */
  osFilter?: string;
  /** Makes the bundle a fragment of this host (Fragment-Host, the `osgi.fragment` capability). */
  fragmentHost?: string;
  /** `<requires>` of the bundle's unit (Require-Bundle as the P2 publisher writes it). */
  requires?: { namespace: string; name: string; range: string; optional?: boolean }[];
  /** Verbatim plugin.xml (broken variants). */
  rawPluginXml?: string;
  /** Extra jar entries (hostile variants). */
  extraEntries?: Record<string, Uint8Array>;
  /** Replace the whole jar (e.g. not a zip). */
  rawJar?: Buffer;
  /** Broken variants of the artifact. */
  missing?: boolean;
  badChecksum?: boolean;
}

export interface FeatureSpec {
  id: string;
  version: string;
  label: string;
  provider: string;
  description: string;
  license: string;
  copyright: string;
  bundles: string[];
  /** Write name/description as `%key` resolved from df_LT properties. */
  localized?: boolean;
}

export interface SiteSpec {
  name: string;
  metadata: 'jar' | 'xml' | 'xz';
  features: FeatureSpec[];
  bundles: BundleSpec[];
  /** Category units of the site (the installer's tree), grouping features. */
  siteCategories?: { id: string; label: string; description: string; features: string[] }[];
  /** Write p2.index (default true). */
  p2Index?: boolean;
}

export interface BuiltSite {
  dir: string;
  /** `id=version` of every unit, sorted: what `p2 director -list` prints. */
  units: string[];
  nodes: NodeSpec[];
}

const enc = new TextEncoder();
const x = (s: string) => s.replace(/&/g, '&amp;').replace(/'/g, '&apos;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const hash = (algo: string, b: Uint8Array) => createHash(algo).update(b).digest('hex');
const simpleName = (fc: string) => fc.slice(fc.lastIndexOf('.') + 1);

/** 1×1 PNG. */
export const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

export function descriptionXml(n: NodeSpec): string {
  const body = (dyn: boolean, keywords: boolean) => `
  <name>${x(n.name)}</name>
  <shortDescription>${x(n.shortDescription)}</shortDescription>
  <fullDescription>
    <intro><p>${x(n.name)} intro paragraph.</p><p>Second <b>bold</b> paragraph.</p></intro>
    <tab name="Settings">
      <description>Main settings.</description>
      <option name="Column">The column to use.</option>
    </tab>
    <option name="Fail on error">Stops on the first error.</option>
  </fullDescription>
  <ports>
    <inPort index="0" name="Input table">Table to read.</inPort>
    ${dyn ? '<dynInPort insert-before="1" name="Additional tables" group-identifier="Inputs">More tables.</dynInPort>' : ''}
    <outPort index="0" name="Output table">Resulting table.</outPort>
  </ports>
  <views><view index="0" name="Summary">A summary view.</view></views>
  ${keywords ? '<keywords><keyword>frobnicate</keyword><keyword>widget</keyword></keywords>' : ''}
`;
  const icon = `icon="./${simpleName(n.factoryClass)}.png"`;
  switch (n.schema) {
    case 'dtd':
      return `<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE knimeNode PUBLIC "-//UNIKN//DTD KNIME Node 2.0//EN" "http://www.knime.org/Node.dtd">\n<knimeNode ${icon} type="Source">${body(false, false)}</knimeNode>\n`;
    case 'v2.8':
      return `<?xml version="1.0" encoding="UTF-8"?>\n<knimeNode ${icon} type="Manipulator" xmlns="http://knime.org/node/v2.8" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://knime.org/node/v2.8 http://knime.org/node/v2.8.xsd">${body(false, false)}</knimeNode>\n`;
    case 'v3.1':
      return `<?xml version="1.0" encoding="UTF-8"?>\n<knimeNode ${icon} type="Learner" xmlns="http://knime.org/node/v3.1">${body(true, false)}</knimeNode>\n`;
    case 'v4.1':
      return `<?xml version="1.0" encoding="UTF-8"?>\n<knime:knimeNode ${icon} type="Predictor" xmlns:knime="http://knime.org/node/v4.1">${body(true, true).replace(/<(\/?)(\w)/g, '<$1knime:$2')}</knime:knimeNode>\n`;
  }
}

export function pluginXml(b: BundleSpec): string {
  const parts: string[] = [];
  if (b.categories?.length) {
    parts.push(
      `  <extension point="org.knime.workbench.repository.categories">\n${b.categories
        .map((c) => `    <category path="${x(c.path)}" level-id="${x(c.levelId)}" name="${x(c.name)}" description="${x(c.description ?? '')}" icon="icons/category.png"/>`)
        .join('\n')}\n  </extension>`,
    );
  }
  if (b.nodes?.length) {
    parts.push(
      `  <extension point="org.knime.workbench.repository.nodes">\n${b.nodes
        .map((n) => `    <node factory-class="${n.factoryClass}" category-path="${x(n.categoryPath)}"${n.deprecated ? ' deprecated="true"' : ''}${n.hidden ? ' hidden="true"' : ''}/>`)
        .join('\n')}\n  </extension>`,
    );
  }
  if (b.nodeSets?.length) {
    parts.push(`  <extension point="org.knime.workbench.repository.nodesets">\n${b.nodeSets.map((s) => `    <nodeset factory-class="${s}"/>`).join('\n')}\n  </extension>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?>\n<?eclipse version="3.4"?>\n<plugin>\n${parts.join('\n')}\n</plugin>\n`;
}

export function bundleJar(b: BundleSpec): Buffer {
  if (b.rawJar) return b.rawJar;
  const files: Record<string, Uint8Array> = {
    'META-INF/MANIFEST.MF': enc.encode(`Manifest-Version: 1.0\nBundle-ManifestVersion: 2\nBundle-SymbolicName: ${b.id};singleton:=true\nBundle-Version: ${b.version}\n${b.fragmentHost ? `Fragment-Host: ${b.fragmentHost}\n` : ''}`),
    'plugin.xml': enc.encode(b.rawPluginXml ?? pluginXml(b)),
  };
  for (const n of b.nodes ?? []) {
    const dir = n.factoryClass.slice(0, n.factoryClass.lastIndexOf('.')).replace(/\./g, '/');
    files[`${dir}/${simpleName(n.factoryClass)}.class`] = new Uint8Array([0xca, 0xfe, 0xba, 0xbe]);
    if (!n.noDescription) files[`${dir}/${simpleName(n.factoryClass)}.xml`] = enc.encode(n.rawDescription ?? descriptionXml(n));
    files[`${dir}/${simpleName(n.factoryClass)}.png`] = PNG;
  }
  Object.assign(files, b.extraEntries ?? {});
  return Buffer.from(zipSync(files, { level: 6, mtime: new Date('2026-01-01T00:00:00Z') }));
}

function props(p: Record<string, string>): string {
  const e = Object.entries(p);
  return `<properties size='${e.length}'>${e.map(([k, v]) => `<property name='${x(k)}' value='${x(v)}'/>`).join('')}</properties>`;
}

function artifactXml(classifier: string, id: string, version: string, bytes: Uint8Array, bad: boolean): string {
  return `    <artifact classifier='${classifier}' id='${id}' version='${version}'>${props({
    'artifact.size': String(bytes.length),
    'download.size': String(bytes.length),
    'download.md5': bad ? '0'.repeat(32) : hash('md5', bytes),
    'download.checksum.sha-256': bad ? '0'.repeat(64) : hash('sha256', bytes),
  })}</artifact>`;
}

/** Writes a simple repository to `dir` and returns what a P2 client lists for it. */
export function buildSite(dir: string, spec: SiteSpec): BuiltSite {
  fs.mkdirSync(path.join(dir, 'plugins'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'features'), { recursive: true });
  const units: string[] = [];
  const listed: string[] = [];
  const artifacts: string[] = [];
  for (const b of spec.bundles) {
    const jar = bundleJar(b);
    if (!b.missing) fs.writeFileSync(path.join(dir, 'plugins', `${b.id}_${b.version}.jar`), jar);
    artifacts.push(artifactXml('osgi.bundle', b.id, b.version, jar, !!b.badChecksum));
    units.push(`  <unit id='${b.id}' version='${b.version}'>
    ${props({ 'org.eclipse.equinox.p2.name': b.id, ...(b.id.endsWith('.source') ? { 'org.eclipse.equinox.p2.type.source': 'true' } : {}) })}
    <provides size='${b.fragmentHost ? 4 : 3}'><provided namespace='org.eclipse.equinox.p2.iu' name='${b.id}' version='${b.version}'/><provided namespace='osgi.bundle' name='${b.id}' version='${b.version}'/><provided namespace='org.eclipse.equinox.p2.eclipse.type' name='bundle' version='1.0.0'/>${b.fragmentHost ? `<provided namespace='osgi.fragment' name='${b.fragmentHost}' version='${b.version}'/>` : ''}</provides>
    ${b.requires ? `<requires size='${b.requires.length}'>${b.requires.map((r) => `<required namespace='${x(r.namespace)}' name='${x(r.name)}' range='${x(r.range)}'${r.optional ? " optional='true'" : ''}/>`).join('')}</requires>` : ''}
    ${b.osFilter ? `<filter>${x(b.osFilter)}</filter>` : ''}
    <artifacts size='1'><artifact classifier='osgi.bundle' id='${b.id}' version='${b.version}'/></artifacts>
    <touchpoint id='org.eclipse.equinox.p2.osgi' version='1.0.0'/>
    <touchpointData size='1'><instructions size='1'><instruction key='manifest'>Bundle-SymbolicName: ${b.id};singleton:=true&#xA;Bundle-Version: ${b.version}&#xA;</instruction></instructions></touchpointData>
  </unit>`);
    listed.push(`${b.id}=${b.version}`);
  }
  for (const f of spec.features) {
    const fjar = Buffer.from(
      zipSync({ 'feature.xml': enc.encode(`<?xml version="1.0"?>\n<feature id="${f.id}" label="${x(f.label)}" version="${f.version}" provider-name="${x(f.provider)}"/>\n`) }, { mtime: new Date('2026-01-01T00:00:00Z') }),
    );
    fs.writeFileSync(path.join(dir, 'features', `${f.id}_${f.version}.jar`), fjar);
    artifacts.push(artifactXml('org.eclipse.update.feature', f.id, f.version, fjar, false));
    const names: Record<string, string> = f.localized
      ? { 'org.eclipse.equinox.p2.name': '%featureName', 'org.eclipse.equinox.p2.description': '%description', 'org.eclipse.equinox.p2.provider': '%providerName', 'df_LT.featureName': f.label, 'df_LT.description': f.description, 'df_LT.providerName': f.provider, 'df_LT.license': f.license, 'df_LT.copyright': f.copyright }
      : { 'org.eclipse.equinox.p2.name': f.label, 'org.eclipse.equinox.p2.description': f.description, 'org.eclipse.equinox.p2.provider': f.provider };
    units.push(`  <unit id='${f.id}.feature.jar' version='${f.version}'>
    ${props({ 'org.eclipse.equinox.p2.name': f.label })}
    <provides size='3'><provided namespace='org.eclipse.equinox.p2.iu' name='${f.id}.feature.jar' version='${f.version}'/><provided namespace='org.eclipse.equinox.p2.eclipse.type' name='feature' version='1.0.0'/><provided namespace='org.eclipse.update.feature' name='${f.id}' version='${f.version}'/></provides>
    <filter>(org.eclipse.update.install.features=true)</filter>
    <artifacts size='1'><artifact classifier='org.eclipse.update.feature' id='${f.id}' version='${f.version}'/></artifacts>
    <touchpoint id='org.eclipse.equinox.p2.osgi' version='1.0.0'/>
    <touchpointData size='1'><instructions size='1'><instruction key='zipped'>true</instruction></instructions></touchpointData>
  </unit>`);
    const reqs = f.bundles.map((id) => {
      const b = spec.bundles.find((s) => s.id === id)!;
      return `<required namespace='org.eclipse.equinox.p2.iu' name='${b.id}' range='[${b.version},${b.version}]'/>`;
    });
    units.push(`  <unit id='${f.id}.feature.group' version='${f.version}' singleton='false'>
    ${props({ ...names, 'org.eclipse.equinox.p2.type.group': 'true' })}
    <provides size='1'><provided namespace='org.eclipse.equinox.p2.iu' name='${f.id}.feature.group' version='${f.version}'/></provides>
    <requires size='${reqs.length + 1}'>${reqs.join('')}<required namespace='org.eclipse.equinox.p2.iu' name='${f.id}.feature.jar' range='[${f.version},${f.version}]'><filter>(org.eclipse.update.install.features=true)</filter></required></requires>
    <touchpoint id='null' version='0.0.0'/>
    <licenses size='1'><license uri='https://example.com/license' url='https://example.com/license'>${f.localized ? '%license' : x(f.license)}</license></licenses>
    <copyright>${f.localized ? '%copyright' : x(f.copyright)}</copyright>
  </unit>`);
    listed.push(`${f.id}.feature.jar=${f.version}`, `${f.id}.feature.group=${f.version}`);
  }
  for (const c of spec.siteCategories ?? []) {
    const reqs = c.features.map((fid) => {
      const f = spec.features.find((s) => s.id === fid)!;
      return `<required namespace='org.eclipse.equinox.p2.iu' name='${f.id}.feature.group' range='[${f.version},${f.version}]'/>`;
    });
    units.push(`  <unit id='${c.id}' version='1.0.0.v20260101'>
    ${props({ 'org.eclipse.equinox.p2.name': c.label, 'org.eclipse.equinox.p2.description': c.description, 'org.eclipse.equinox.p2.type.category': 'true' })}
    <provides size='1'><provided namespace='org.eclipse.equinox.p2.iu' name='${c.id}' version='1.0.0.v20260101'/></provides>
    <requires size='${reqs.length}'>${reqs.join('')}</requires>
    <touchpoint id='null' version='0.0.0'/>
  </unit>`);
    listed.push(`${c.id}=1.0.0.v20260101`);
  }
  const content = `<?xml version='1.0' encoding='UTF-8'?>\n<?metadataRepository version='1.2.0'?>\n<repository name='${x(spec.name)}' type='org.eclipse.equinox.internal.p2.metadata.repository.LocalMetadataRepository' version='1'>\n  ${props({ 'p2.timestamp': '1767225600000', 'p2.compressed': 'true' })}\n  <units size='${units.length}'>\n${units.join('\n')}\n  </units>\n</repository>\n`;
  const contentFile = spec.metadata === 'jar' ? 'content.xml' : 'content.xml';
  if (spec.metadata === 'jar') fs.writeFileSync(path.join(dir, 'content.jar'), zipSync({ [contentFile]: enc.encode(content) }));
  else {
    fs.writeFileSync(path.join(dir, 'content.xml'), content);
    if (spec.metadata === 'xz') {
      execFileSync('xz', ['-f', path.join(dir, 'content.xml')]);
    }
  }
  const artifactsXml = `<?xml version='1.0' encoding='UTF-8'?>\n<?artifactRepository version='1.1.0'?>\n<repository name='${x(spec.name)}' type='org.eclipse.equinox.p2.artifact.repository.simpleRepository' version='1'>\n  ${props({ 'p2.timestamp': '1767225600000' })}\n  <mappings size='3'>\n    <rule filter='(&amp; (classifier=osgi.bundle))' output='\${repoUrl}/plugins/\${id}_\${version}.jar'/>\n    <rule filter='(&amp; (classifier=binary))' output='\${repoUrl}/binary/\${id}_\${version}'/>\n    <rule filter='(&amp; (classifier=org.eclipse.update.feature))' output='\${repoUrl}/features/\${id}_\${version}.jar'/>\n  </mappings>\n  <artifacts size='${artifacts.length}'>\n${artifacts.join('\n')}\n  </artifacts>\n</repository>\n`;
  fs.writeFileSync(path.join(dir, 'artifacts.jar'), zipSync({ 'artifacts.xml': enc.encode(artifactsXml) }));
  if (spec.p2Index !== false) {
    const meta = spec.metadata === 'xz' ? 'content.xml.xz,content.xml,\\!' : 'content.xml,\\!';
    fs.writeFileSync(path.join(dir, 'p2.index'), `version=1\nmetadata.repository.factory.order=${meta}\nartifact.repository.factory.order=artifacts.xml,\\!\n`);
  }
  return { dir, units: listed.sort(), nodes: spec.bundles.flatMap((b) => b.nodes ?? []) };
}

/** A composite repository in `dir` whose children are `locations` (relative or absolute). */
export function buildComposite(dir: string, locations: string[]): void {
  fs.mkdirSync(dir, { recursive: true });
  const children = `<children size='${locations.length}'>${locations.map((l) => `<child location='${x(l)}'/>`).join('')}</children>`;
  for (const [file, type] of [
    ['compositeContent.xml', 'org.eclipse.equinox.internal.p2.metadata.repository.CompositeMetadataRepository'],
    ['compositeArtifacts.xml', 'org.eclipse.equinox.internal.p2.artifact.repository.CompositeArtifactRepository'],
  ] as const) {
    fs.writeFileSync(
      path.join(dir, file),
      `<?xml version='1.0' encoding='UTF-8'?>\n<?compositeMetadataRepository version='1.0.0'?>\n<repository name='Composite' type='${type}' version='1.0.0'>\n  ${props({ 'p2.timestamp': '1767225600000', 'p2.atomic.composite.loading': 'true' })}\n  ${children}\n</repository>\n`,
    );
  }
  fs.writeFileSync(path.join(dir, 'p2.index'), 'version=1\nmetadata.repository.factory.order=compositeContent.xml,\\!\nartifact.repository.factory.order=compositeArtifacts.xml,\\!\n');
}

/** The standard generated site: two features, a category bundle, node bundles in all four description generations, a source bundle and an OS fragment. */
export function exampleSpec(metadata: SiteSpec['metadata'] = 'jar', prefix = 'org.example'): SiteSpec {
  const v = '1.2.0.v20260101';
  const node = (cls: string, schema: DescriptionSchema, categoryPath: string, name: string): NodeSpec => ({
    factoryClass: `${prefix}.nodes.${cls}NodeFactory`,
    categoryPath,
    name,
    shortDescription: `${name} does ${schema} things.`,
    schema,
  });
  return {
    name: 'Example Nodes',
    metadata,
    features: [
      { id: `${prefix}.feature`, version: v, label: 'Example Nodes', provider: 'Example Inc.', description: 'Nodes that frobnicate widgets.', license: 'Apache-2.0 text', copyright: '(c) 2026 Example', bundles: [`${prefix}.core`, `${prefix}.nodes`], localized: true },
      { id: `${prefix}.extra.feature`, version: v, label: 'Example Extras', provider: 'Example Inc.', description: 'More.', license: 'MIT', copyright: '(c) 2026', bundles: [`${prefix}.nodes.source`] },
    ],
    bundles: [
      { id: `${prefix}.core`, version: v, categories: [{ path: '/community', levelId: 'example', name: 'Example', description: 'Example nodes' }, { path: '/community/example', levelId: 'io', name: 'Input/Output' }] },
      {
        id: `${prefix}.nodes`,
        version: v,
        nodes: [
          node('CsvReader', 'dtd', '/community/example/io', 'CSV Frobnicator Reader'),
          node('Joiner', 'v2.8', '/community/example', 'Widget Joiner'),
          node('Learner', 'v3.1', '/community/example', 'Widget Learner'),
          node('Predictor', 'v4.1', '/community/example', 'Widget Predictor'),
        ],
        nodeSets: [`${prefix}.nodes.ExampleNodeSetFactory`],
      },
      { id: `${prefix}.nodes.source`, version: v, nodes: [node('Ignored', 'v4.1', '/community', 'Source Only')] },
      { id: `${prefix}.native.linux`, version: v, osFilter: '(& (osgi.os=linux) (osgi.arch=x86_64))', fragmentHost: `${prefix}.nodes`, nodes: [node('Native', 'v4.1', '/community', 'Native Only')] },
    ],
    siteCategories: [{ id: `${prefix}.category`, label: 'Example Category', description: 'All example features', features: [`${prefix}.feature`] }],
  };
}

/**
 * A pure-Python extension bundle: plugin.xml names the extension folder, which holds knime.yml,
 * the module with `knext.category` and `@knext.node` declarations, and an icon. The module also
 * has code that would leave a marker file if anything ever executed it.
 */
export function pythonBundle(id: string, version: string, marker: string): BundleSpec {
  const module = `import os
import knime.extension as knext

os.system("touch ${marker}")  # never runs: the crawler reads, it does not execute

demo = knext.category(
    path="/community",
    level_id="pydemo",
    name="Python Demo",
    description='Nodes written in ' "Python",
    icon="icons/category.png",
)

@knext.node(name="Gizmo Scaler", node_type=knext.NodeType.MANIPULATOR, icon_path="icons/scaler.png", category=demo)
@knext.input_table(name="Input table", description="Gizmos to scale.")
@knext.output_table(name="Scaled table", description="The scaled gizmos.")
class GizmoScaler:
    """Scales gizmos by a factor.

    Multiplies every numeric column by the factor,
    keeping (parentheses, "quotes") intact.
    """

    factor = knext.DoubleParameter("Factor", "The factor", 2.0)

    def execute(self, ctx, table):
        return table


@knext.node("Gizmo Counter", knext.NodeType.SINK, "icons/scaler.png", "/community/pydemo")
@knext.input_table("Counted table", "Any table.")
class GizmoCounter:
    '''Counts gizmos.'''
    pass
`;
  const plugin = `<?xml version="1.0" encoding="UTF-8"?>\n<plugin>\n  <extension point="org.knime.python3.nodes.PythonExtension">\n    <PythonExtension ExtensionPath="python/src" />\n  </extension>\n</plugin>\n`;
  return {
    id,
    version,
    rawPluginXml: plugin,
    extraEntries: {
      'python/src/knime.yml': enc.encode('name: gizmos # the extension\nauthor: Example\nenv_yml_path: environment.yml\nextension_module: gizmo_ext\ngroup_id: org.example.py\nversion: 1.0.0\nvendor: Example Inc.\n'),
      'python/src/gizmo_ext.py': enc.encode(module),
      'python/src/icons/scaler.png': PNG,
    },
  };
}
