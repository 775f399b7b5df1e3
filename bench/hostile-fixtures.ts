// What the hostile-load bench uploads and how: the hostile update sites (an xz bomb of
// metadata, a pure-Python extension whose module makes a naive reader rescan), the hostile
// changelog, and a small ssh2 SFTP client. Shared by the bench and its attacker process.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';
import { buildSite, pythonBundle } from '../test/helpers/p2-fixtures.js';

/** The crawler's cap on one metadata file after decompression (DEFAULT_CRAWL_LIMITS.maxXmlBytes). */
const MAX_XML_BYTES = 16 * 1024 * 1024;

/**
 * `update-site/bomb/`: a content.xml.xz of a few KB that expands to 16 MiB of `<p/>` elements,
 * just inside the crawler's size cap, so only parsing it can be what hurts.
 */
export function buildXzBomb(dir: string): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const head = `<?xml version='1.0' encoding='UTF-8'?>\n<?metadataRepository version='1.2.0'?>\n<repository name='Bomb' type='org.eclipse.equinox.internal.p2.metadata.repository.LocalMetadataRepository' version='1'>\n  <units size='1'>\n`;
  const tail = `\n  </units>\n</repository>\n`;
  const count = Math.floor((MAX_XML_BYTES - head.length - tail.length - 64) / 4);
  fs.writeFileSync(path.join(dir, 'content.xml'), head + '<p/>'.repeat(count) + tail);
  execFileSync('xz', ['-f', '-9', path.join(dir, 'content.xml')]);
  fs.writeFileSync(
    path.join(dir, 'artifacts.xml'),
    `<?xml version='1.0' encoding='UTF-8'?>\n<?artifactRepository version='1.1.0'?>\n<repository name='Bomb' type='org.eclipse.equinox.p2.artifact.repository.simpleRepository' version='1'>\n  <artifacts size='0'></artifacts>\n</repository>\n`,
  );
  fs.writeFileSync(path.join(dir, 'p2.index'), 'version=1\nmetadata.repository.factory.order=content.xml.xz,\\!\nartifact.repository.factory.order=artifacts.xml,\\!\n');
  return ['content.xml.xz', 'artifacts.xml', 'p2.index'];
}

/**
 * `update-site/py/`: a well-formed site with one pure-Python extension bundle whose module
 * repeats `@knext.node((` to about `moduleBytes`: every decorator opens a call that never
 * closes, which a reader that rescans to the end of the file per decorator pays for n² times.
 */
export function buildPythonSite(dir: string, moduleBytes: number): string[] {
  const bundle = pythonBundle('org.hostile.py', '1.0.0.v20260101', path.join(dir, 'never-written'));
  const module = `import knime.extension as knext\n\n${'@knext.node(('.repeat(Math.ceil(moduleBytes / 13))}\n`;
  bundle.extraEntries = { ...bundle.extraEntries, 'python/src/gizmo_ext.py': new TextEncoder().encode(module) };
  buildSite(dir, { name: 'Hostile Python', metadata: 'jar', features: [], bundles: [bundle] });
  return ['content.jar', 'artifacts.jar', 'p2.index', 'plugins/org.hostile.py_1.0.0.v20260101.jar'];
}

/**
 * A changelog of `items` items, each citing its own link reference definition, with the
 * definitions at the end: rendered naively, every item re-reads every definition. `variant`
 * changes one word so each PATCH stores a new value (and the page must be rendered again).
 */
export function hostileChangelog(items: number, variant: number): string {
  const list = Array.from({ length: items }, (_, i) => `- Item ${i} [r${i}]`).join('\n');
  const refs = Array.from({ length: items }, (_, i) => `[r${i}]: https://example.com/${i}`).join('\n');
  return `# Changelog\n\n## [1.0.${variant}] - 2026-01-01\n### Added\n${list}\n\n${refs}\n`;
}

export interface SftpConnection {
  sftp: ssh2.SFTPWrapper;
  end(): void;
}

export function connectSftp(port: number, username: string, password: string): Promise<SftpConnection> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    client.on('ready', () => client.sftp((err, sftp) => (err ? reject(err) : resolve({ sftp, end: () => client.end() }))));
    client.on('error', reject);
    client.on('close', () => reject(new Error('SFTP connection closed by the server')));
    client.connect({ host: '127.0.0.1', port, username, password, tryKeyboard: false, readyTimeout: 20_000 });
  });
}

/** One SFTP request as a promise: resolves with its result, rejects with the server's status. */
export function call<T = void>(start: (cb: (err: Error | null | undefined, result?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((err, result) => (err ? reject(err) : resolve(result as T))));
}

export async function putFile(sftp: ssh2.SFTPWrapper, remote: string, data: Buffer): Promise<void> {
  await call((cb) => sftp.writeFile(remote, data, cb));
}

/** Creates `names` under `dir`, `window` requests in flight at a time. */
export async function mkdirMany(sftp: ssh2.SFTPWrapper, dir: string, names: string[], window = 64): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++] as string;
      await call((cb) => sftp.mkdir(`${dir}/${name}`, cb));
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
}
