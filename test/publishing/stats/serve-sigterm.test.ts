import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';


/** A GET on a connection of its own from `from` (each loopback address is another client); resolves with the body. */
function getOnce(url: string, from: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, localAddress: from }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

for (const dialect of dialects()) {
  describe(`pier serve and download counts (${dialect.name})`, () => {
    test('SIGTERM loses no download counted: the download process writes its counts before it exits', async () => {
      const db = await dialect.create();
      const dataDir = tempDir('pier-counts-serve-');
      // The label's current release, as a release lays it out (downloads/releases.ts serves a label from it).
      const jar = path.join(dataDir, 'storage', 'p1', 'releases', '5.4', '1', 'features', 'org.x.f_1.0.0.jar');
      fs.mkdirSync(path.dirname(jar), { recursive: true });
      fs.writeFileSync(jar, 'feature');
      fs.symlinkSync('1', path.join(dataDir, 'storage', 'p1', 'releases', '5.4', 'current'));
      const [http, downloads] = await Promise.all([freePort(), freePort()]);
      const env = { ...process.env, PIER_DATA_DIR: dataDir, PIER_DATABASE_URL: db.url, PIER_HTTP_PORT: String(http), PIER_DOWNLOAD_PORT: String(downloads), PIER_LOG_LEVEL: 'warn' };
      // The web part too: the download host then runs in a process of its own (cli/part-process.ts), as in production.
      const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads'], { env });
      let out = '';
      child.stderr.on('data', (c) => {
        out += c;
      });
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      try {
        for (let i = 0; i < 600 && !/downloads listening/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
        assert.match(out, /downloads listening on .*own process/);
        // Five clients' downloads (a file counts once per client and day).
        for (let i = 1; i <= 5; i++) assert.equal(await getOnce(`http://127.0.0.1:${downloads}/p1/5.4/features/org.x.f_1.0.0.jar`, `127.0.0.${i}`), 'feature');
        assert.equal((await fetch(`http://127.0.0.1:${downloads}/p1/5.4/features/org.x.f_1.0.0.jar`, { method: 'HEAD' })).status, 200);
        child.kill('SIGTERM');
        assert.equal(await exited, 0, out);
      } finally {
        child.kill('SIGKILL');
      }
      const check = await openPublishingDatabase(db.url);
      try {
        const rows = await check.db.selectFrom('download_counts').selectAll().execute();
        assert.deepEqual(
          rows.map((r) => [r.product_id, r.label, r.artifact, Number(r.downloads)]),
          [['p1', '5.4', 'org.x.f', 5]],
        );
      } finally {
        await check.close();
        await db.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
