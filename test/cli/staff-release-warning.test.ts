// `pier staff enable` warns when the page would show `{{platformRelease}}` as written.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../helpers/publishing.js';

for (const target of dialects()) {
  describe(`pier staff enable and the platform release on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let env: NodeJS.ProcessEnv;
    let server: RunningPublishing;
    const pier = (...args: string[]) => {
      const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };

    before(async () => {
      db = await target.create();
      env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url };
      server = await startPublishing(db.url);
    });
    after(async () => {
      await server.close();
      await db.drop();
    });

    test('enable names the fields that show the placeholder while no release is set, and is silent once one is', async () => {
      const token = JSON.parse(pier('staff', 'register', 'rel-nodes', '--name', 'Rel', '--json').stdout).editToken;
      assert.equal((await patchProduct(server.url, 'rel-nodes', token, { instructions: 'Add\n\nhttps://dl.example/{{platformRelease}}' })).status, 200);
      const text = pier('staff', 'enable', 'rel-nodes', '--force');
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /is live/);
      assert.match(text.stdout, /Warning: instructions \(line 3\): \{\{platformRelease\}\} shows as written.*set-release/);
      const json = JSON.parse(pier('staff', 'enable', 'rel-nodes', '--force', '--json').stdout);
      assert.deepEqual(json.warnings.map((w: { field: string; line: number }) => [w.field, w.line]), [['instructions', 3]]);
      assert.equal(pier('staff', 'set-release', '5.4').code, 0);
      const after = pier('staff', 'enable', 'rel-nodes', '--force', '--json');
      assert.equal(JSON.parse(after.stdout).warnings, undefined, 'nothing to warn about');
      assert.doesNotMatch(pier('staff', 'enable', 'rel-nodes', '--force').stdout, /Warning/);
    });
  });
}
