import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { run } from '../sftp/stack.js';

export interface P2Bundle {
  id: string;
  version: string;
  requires?: { id: string; range: string }[];
}

export interface P2Site {
  dir: string;
  feature: { id: string; version: string };
  bundles: P2Bundle[];
  /** Relative paths of every file written. */
  files: string[];
}

const hash = (algo: string, b: Buffer) => createHash(algo).update(b).digest('hex');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/'/g, '&apos;').replace(/</g, '&lt;');

async function zipDir(src: string, out: string): Promise<Buffer> {
  const r = await run('zip', ['-qrX', out, '.'], { cwd: src });
  if (r.code !== 0) throw new Error(`zip failed: ${r.stderr}`);
  return fs.readFileSync(out);
}

function artifact(classifier: string, id: string, version: string, bytes: Buffer): string {
  return `    <artifact classifier='${classifier}' id='${id}' version='${version}'>
      <properties size='5'>
        <property name='artifact.size' value='${bytes.length}'/>
        <property name='download.size' value='${bytes.length}'/>
        <property name='download.md5' value='${hash('md5', bytes)}'/>
        <property name='download.checksum.sha-256' value='${hash('sha256', bytes)}'/>
        <property name='download.contentType' value='application/zip'/>
      </properties>
    </artifact>`;
}

function bundleUnit(b: P2Bundle): string {
  const req = b.requires ?? [];
  return `    <unit id='${b.id}' version='${b.version}'>
      <update id='${b.id}' range='[0.0.0,${b.version})' severity='0'/>
      <properties size='1'><property name='org.eclipse.equinox.p2.name' value='${esc(b.id)}'/></properties>
      <provides size='3'>
        <provided namespace='org.eclipse.equinox.p2.iu' name='${b.id}' version='${b.version}'/>
        <provided namespace='osgi.bundle' name='${b.id}' version='${b.version}'/>
        <provided namespace='org.eclipse.equinox.p2.eclipse.type' name='bundle' version='1.0.0'/>
      </provides>
      <requires size='${req.length}'>
${req.map((r) => `        <required namespace='osgi.bundle' name='${r.id}' range='${r.range}'/>`).join('\n')}
      </requires>
      <artifacts size='1'><artifact classifier='osgi.bundle' id='${b.id}' version='${b.version}'/></artifacts>
      <touchpoint id='org.eclipse.equinox.p2.osgi' version='1.0.0'/>
      <touchpointData size='1'><instructions size='1'><instruction key='manifest'>Bundle-SymbolicName: ${b.id};singleton:=true&#xA;Bundle-Version: ${b.version}&#xA;</instruction></instructions></touchpointData>
    </unit>`;
}

/**
 * A P2 simple repository as a build tool writes it: bundle and feature jars, `content.xml`
 * (also as `content.xml.xz`), `artifacts.xml` with sizes and checksums the director verifies,
 * and `p2.index`. The feature groups two bundles; one bundle needs `org.knime.core`, which only
 * the platform provides (stubrepo.py stands in for it).
 */
export async function generateP2Site(dir: string, options: { version?: string } = {}): Promise<P2Site> {
  // Another version is another release of the same site: other jar names, other metadata.
  const version = options.version ?? '1.0.0.v20260101';
  const feature = { id: 'org.example.csv.feature', version };
  const bundles: P2Bundle[] = [
    { id: 'org.example.csv', version, requires: [{ id: 'org.knime.core', range: '5.4.0' }] },
    { id: 'org.example.csv.io', version, requires: [{ id: 'org.example.csv', range: '1.0.0' }] },
  ];
  const work = fs.mkdtempSync(path.join(path.dirname(dir), 'p2build-'));
  fs.mkdirSync(path.join(dir, 'plugins'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'features'), { recursive: true });
  const artifacts: string[] = [];
  for (const b of bundles) {
    const src = path.join(work, b.id);
    fs.mkdirSync(path.join(src, 'META-INF'), { recursive: true });
    const requires = (b.requires ?? []).map((r) => `${r.id};bundle-version="${r.range}"`).join(',');
    fs.writeFileSync(
      path.join(src, 'META-INF', 'MANIFEST.MF'),
      `Manifest-Version: 1.0\nBundle-ManifestVersion: 2\nBundle-SymbolicName: ${b.id};singleton:=true\nBundle-Version: ${b.version}\n${requires ? `Require-Bundle: ${requires}\n` : ''}`,
    );
    fs.writeFileSync(path.join(src, 'plugin.xml'), `<?xml version="1.0"?>\n<plugin><!-- ${b.id} --></plugin>\n`);
    fs.writeFileSync(path.join(src, 'payload.bin'), Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 31 + b.id.length) % 256)));
    const jar = await zipDir(src, path.join(dir, 'plugins', `${b.id}_${b.version}.jar`));
    artifacts.push(artifact('osgi.bundle', b.id, b.version, jar));
  }
  const fsrc = path.join(work, 'feature');
  fs.mkdirSync(fsrc);
  fs.writeFileSync(
    path.join(fsrc, 'feature.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<feature id="${feature.id}" label="CSV Nodes" version="${feature.version}" provider-name="Example">\n${bundles.map((b) => `  <plugin id="${b.id}" version="${b.version}" unpack="false"/>`).join('\n')}\n</feature>\n`,
  );
  const fjar = await zipDir(fsrc, path.join(dir, 'features', `${feature.id}_${feature.version}.jar`));
  artifacts.push(artifact('org.eclipse.update.feature', feature.id, feature.version, fjar));
  fs.rmSync(work, { recursive: true, force: true });

  const units = [
    ...bundles.map(bundleUnit),
    `    <unit id='${feature.id}.feature.jar' version='${feature.version}'>
      <properties size='1'><property name='org.eclipse.equinox.p2.name' value='CSV Nodes'/></properties>
      <provides size='3'>
        <provided namespace='org.eclipse.equinox.p2.iu' name='${feature.id}.feature.jar' version='${feature.version}'/>
        <provided namespace='org.eclipse.equinox.p2.eclipse.type' name='feature' version='1.0.0'/>
        <provided namespace='org.eclipse.update.feature' name='${feature.id}' version='${feature.version}'/>
      </provides>
      <filter>(org.eclipse.update.install.features=true)</filter>
      <artifacts size='1'><artifact classifier='org.eclipse.update.feature' id='${feature.id}' version='${feature.version}'/></artifacts>
      <touchpoint id='org.eclipse.equinox.p2.osgi' version='1.0.0'/>
      <touchpointData size='1'><instructions size='1'><instruction key='zipped'>true</instruction></instructions></touchpointData>
    </unit>`,
    `    <unit id='${feature.id}.feature.group' version='${feature.version}' singleton='false'>
      <update id='${feature.id}.feature.group' range='[0.0.0,${feature.version})' severity='0'/>
      <properties size='2'>
        <property name='org.eclipse.equinox.p2.name' value='CSV Nodes'/>
        <property name='org.eclipse.equinox.p2.type.group' value='true'/>
      </properties>
      <provides size='1'><provided namespace='org.eclipse.equinox.p2.iu' name='${feature.id}.feature.group' version='${feature.version}'/></provides>
      <requires size='${bundles.length + 1}'>
${bundles.map((b) => `        <required namespace='org.eclipse.equinox.p2.iu' name='${b.id}' range='[${b.version},${b.version}]'/>`).join('\n')}
        <required namespace='org.eclipse.equinox.p2.iu' name='${feature.id}.feature.jar' range='[${feature.version},${feature.version}]'><filter>(org.eclipse.update.install.features=true)</filter></required>
      </requires>
      <touchpoint id='null' version='0.0.0'/>
    </unit>`,
  ];
  fs.writeFileSync(
    path.join(dir, 'content.xml'),
    `<?xml version='1.0' encoding='UTF-8'?>\n<?metadataRepository version='1.2.0'?>\n<repository name='CSV Nodes' type='org.eclipse.equinox.internal.p2.metadata.repository.LocalMetadataRepository' version='1'>\n  <properties size='1'><property name='p2.timestamp' value='1767225600000'/></properties>\n  <units size='${units.length}'>\n${units.join('\n')}\n  </units>\n</repository>\n`,
  );
  const xz = await run('xz', ['-k', '-f', path.join(dir, 'content.xml')]);
  if (xz.code !== 0) throw new Error(`xz failed: ${xz.stderr}`);
  fs.writeFileSync(
    path.join(dir, 'artifacts.xml'),
    `<?xml version='1.0' encoding='UTF-8'?>\n<?artifactRepository version='1.1.0'?>\n<repository name='CSV Nodes' type='org.eclipse.equinox.p2.artifact.repository.simpleRepository' version='1'>\n  <properties size='1'><property name='p2.timestamp' value='1767225600000'/></properties>\n  <mappings size='2'>\n    <rule filter='(&amp; (classifier=osgi.bundle))' output='\${repoUrl}/plugins/\${id}_\${version}.jar'/>\n    <rule filter='(&amp; (classifier=org.eclipse.update.feature))' output='\${repoUrl}/features/\${id}_\${version}.jar'/>\n  </mappings>\n  <artifacts size='${artifacts.length}'>\n${artifacts.join('\n')}\n  </artifacts>\n</repository>\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'p2.index'),
    'version=1\nmetadata.repository.factory.order=content.xml.xz,content.xml,\\!\nartifact.repository.factory.order=artifacts.xml,\\!\n',
  );
  const files = fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => fs.statSync(path.join(dir, f)).isFile())
    .sort();
  return { dir, feature, bundles, files };
}
