import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { fileManifests } from '../../../src/publishing/files/manifest.js';
import { hostKeyDir, loadOrCreateHostKeys } from '../../../src/publishing/sftp/host-keys.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function put(root: string, rel: string, data: string | Buffer): void {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, data);
}

describe('fileManifests (storage)', () => {
  test('hashes each stored file once per storage version: unchanged files are not read again, a replaced one is', async () => {
    const dir = tempDir('pier-manifest-');
    try {
      const storage = localStorage(dir);
      put(dir, 'p/update-site/5.4/content.jar', 'content');
      put(dir, 'p/update-site/5.4/plugins/a.jar', 'a'.repeat(1000));
      fs.mkdirSync(path.join(dir, 'p/update-site/5.4/empty/inner'), { recursive: true });
      put(dir, 'p/update-site/5.4.zip', 'zip');
      put(dir, 'p/update-site/5.5/other.jar', 'other');
      const m = fileManifests(storage);
      const first = await m.label('p', '5.4');
      assert.deepEqual(first, {
        label: '5.4',
        files: [
          { path: 'content.jar', size: 7, sha256: sha('content') },
          { path: 'plugins/a.jar', size: 1000, sha256: sha('a'.repeat(1000)) },
        ],
        folders: ['empty', 'empty/inner', 'plugins'],
        archive: { size: 3, sha256: sha('zip') },
      });
      const read = m.hashedBytes();
      assert.equal(read, 1010);
      assert.deepEqual(await m.label('p', '5.4'), first);
      assert.equal(m.hashedBytes(), read, 'nothing read again');
      // Same size, new bytes, as an upload puts them: a new file renamed into place.
      const target = path.join(dir, 'p/update-site/5.4/plugins/a.jar');
      fs.writeFileSync(`${target}.new`, 'b'.repeat(1000));
      fs.renameSync(`${target}.new`, target);
      const again = await m.label('p', '5.4');
      assert.equal(again.files[1]?.sha256, sha('b'.repeat(1000)));
      assert.equal(m.hashedBytes(), read + 1000, 'only the replaced file read');
      assert.deepEqual(await m.label('p', 'none'), { label: 'none', files: [], folders: [], archive: null });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the cache keeps at most maxCached entries and stays correct beyond it', async () => {
    const dir = tempDir('pier-manifest-');
    try {
      for (let i = 0; i < 5; i++) put(dir, `p/update-site/l/f${i}`, `x${i}`);
      const m = fileManifests(localStorage(dir), { maxCached: 2 });
      const a = await m.label('p', 'l');
      const b = await m.label('p', 'l');
      assert.deepEqual(a, b);
      assert.equal(a.files.length, 5);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const target of dialects()) {
  describe(`publishing info and label files on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let pier: RunningPublishing;
    let dataDir: string;
    let token: string;
    const env = () => ({ PIER_SFTP_HOST: 'sftp.pier.example', PIER_SFTP_PORT: '2022', PIER_DOWNLOAD_URL: 'https://dl.pier.example' });

    before(async () => {
      db = await target.create();
      dataDir = tempDir('pier-manifest-data-');
      pier = await startPublishing(db.url, { failureLimits: { maxFailures: 1000 } }, { PIER_DATA_DIR: dataDir, ...env() });
      token = (await pier.service.products.register('csv-nodes', { name: 'CSV' })).editToken;
      await pier.service.products.register('other-ext', { name: 'Other' });
    });
    after(async () => {
      await pier.close();
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    test('GET /api/publishing needs no credential and lists the SFTP address and the host keys the SFTP part presents', async () => {
      const res = await fetch(`${pier.url}/api/publishing`);
      assert.equal(res.status, 200);
      const { cli, ...info } = (await res.json()) as { cli: unknown; sftp: { hostKeys: { type: string; fingerprint: string }[] } };
      // The vendor's one-file pier, when this checkout has built it (info/vendor-cli.ts).
      assert.ok(cli === null || typeof (cli as { sha256: unknown }).sha256 === 'string');
      const config = loadConfig({ PIER_DATA_DIR: dataDir, ...env() });
      const keys = loadOrCreateHostKeys(hostKeyDir(config.publishing.storageDir));
      assert.deepEqual(info, {
        baseUrl: 'http://pier.test',
        downloadUrl: 'https://dl.pier.example',
        sftp: { host: 'sftp.pier.example', port: 2022, hostKeys: keys.map((k) => ({ type: k.type, fingerprint: k.fingerprint })) },
        trustedPublishing: { tokenEndpoint: 'http://pier.test/api/oidc/token', audience: 'http://pier.test' },
      });
      assert.equal(info.sftp.hostKeys[0]?.type, 'ssh-ed25519');
      assert.match(info.sftp.hostKeys[0]?.fingerprint ?? '', /^SHA256:[A-Za-z0-9+/]{43}$/);
    });

    test('GET /api/products/:id/labels/:label/files lists what is stored, with SHA-256, for the edit token only', async () => {
      const storage = config().publishing.storageDir;
      put(storage, 'csv-nodes/update-site/5.4/content.jar', 'metadata');
      put(storage, 'csv-nodes/update-site/5.4/plugins/x_1.0.jar', 'jar bytes');
      fs.mkdirSync(path.join(storage, 'csv-nodes/update-site/5.4/features'), { recursive: true });
      const url = `${pier.url}/api/products/csv-nodes/labels/5.4/files`;
      const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), {
        label: '5.4',
        files: [
          { path: 'content.jar', size: 8, sha256: sha('metadata') },
          { path: 'plugins/x_1.0.jar', size: 9, sha256: sha('jar bytes') },
        ],
        folders: ['features', 'plugins'],
        archive: null,
      });
      const empty = await fetch(`${pier.url}/api/products/csv-nodes/labels/nightly/files`, { headers: { authorization: `Bearer ${token}` } });
      assert.deepEqual(await empty.json(), { label: 'nightly', files: [], folders: [], archive: null });

      const none = await fetch(url);
      assert.equal(none.status, 401);
      assert.match(none.headers.get('content-type') ?? '', /problem\+json/);
      assert.equal((await fetch(url, { headers: { authorization: 'Bearer pier_et_wrong' } })).status, 401);
      // Another product's token does not open this product's files.
      const other = (await pier.service.products.rotateEditToken('other-ext')).editToken;
      assert.equal((await fetch(url, { headers: { authorization: `Bearer ${other}` } })).status, 401);
      assert.equal((await fetch(`${pier.url}/api/products/no-such/labels/5.4/files`, { headers: { authorization: `Bearer ${token}` } })).status, 404);
      // Not a label (a name no label folder can have): 404, never a listing of something else.
      for (const bad of ['..', '.', '%2e%2e', 'a%2Fb', '5.4%00']) {
        const r = await fetch(`${pier.url}/api/products/csv-nodes/labels/${bad}/files`, { headers: { authorization: `Bearer ${token}` } });
        assert.ok(r.status === 404 || r.status === 400, `${bad}: ${r.status}`);
      }
    });

    const config = () => loadConfig({ PIER_DATA_DIR: dataDir, ...env() });
  });
}
