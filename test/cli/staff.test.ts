import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../helpers/publishing.js';

for (const target of dialects()) {
  describe(`pier staff on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let env: NodeJS.ProcessEnv;
    let server: RunningPublishing;
    const pier = (...args: string[]) => {
      const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };

    before(async () => {
      db = await target.create();
      env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url, PIER_BASE_URL: 'https://pier.example', PIER_SFTP_HOST: 'sftp.pier.example' };
      // A server already running on the same database sees every CLI change on its next request.
      server = await startPublishing(db.url);
    });
    after(async () => {
      await server.close();
      await db.drop();
    });

    test('register --json prints exactly one JSON object with the credentials', () => {
      const r = pier('staff', 'register', 'csv-nodes', '--name', 'CSV Nodes', '--json');
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.deepEqual(Object.keys(out).sort(), ['editToken', 'pageUrl', 'productId', 'sftp']);
      assert.deepEqual(Object.keys(out.sftp).sort(), ['host', 'password', 'port', 'username']);
      assert.equal(out.productId, 'csv-nodes');
      assert.equal(out.pageUrl, 'https://pier.example/product/csv-nodes');
      assert.match(out.editToken, /^pier_et_[0-9A-Za-z]{49}$/);
      assert.equal(out.sftp.host, 'sftp.pier.example');
      assert.equal(out.sftp.port, 2222);
      assert.equal(out.sftp.username, 'csv-nodes');
      assert.ok(out.sftp.password.length >= 22, 'at least 128 bits in base62');
    });

    test('bad slugs, reserved names and duplicates are refused with a message and non-zero exit', () => {
      for (const [id, pattern] of [
        ['Bad_Slug', /lowercase/],
        ['a', /2 to 64/],
        ['double--hyphen', /hyphens/],
        ['trail-', /hyphens/],
        ['x'.repeat(65), /2 to 64/],
        ['api', /reserved/],
        ['assets', /reserved/],
        ['csv-nodes', /already exists/],
      ] as const) {
        const r = pier('staff', 'register', id, '--name', 'X');
        assert.notEqual(r.code, 0, id);
        assert.match(r.stderr, pattern, `${id}: ${r.stderr}`);
        assert.equal(r.stdout, '');
      }
    });

    test('rotate-token: the old token stops working at once on the running server', async () => {
      const reg = JSON.parse(pier('staff', 'register', 'rot-ext', '--name', 'Rot', '--json').stdout);
      assert.equal((await patchProduct(server.url, 'rot-ext', reg.editToken, { description: 'one' })).status, 200);
      const r = pier('staff', 'rotate-token', 'rot-ext', '--json');
      assert.equal(r.code, 0, r.stderr);
      const { editToken } = JSON.parse(r.stdout);
      assert.notEqual(editToken, reg.editToken);
      assert.equal((await patchProduct(server.url, 'rot-ext', reg.editToken, { description: 'two' })).status, 401);
      assert.equal((await patchProduct(server.url, 'rot-ext', editToken, { description: 'three' })).status, 200);
      assert.notEqual(pier('staff', 'rotate-token', 'nope-nope').code, 0);
    });

    test('rotate-sftp-password issues a new password; list, show --history and set-release work with --json', async () => {
      const before = pier('staff', 'rotate-sftp-password', 'csv-nodes', '--json');
      const oldPassword = JSON.parse(before.stdout).password;
      assert.ok(await server.service.products.authenticateSftp('csv-nodes', oldPassword));
      const p = pier('staff', 'rotate-sftp-password', 'csv-nodes', '--json');
      assert.equal(p.code, 0, p.stderr);
      const rotated = JSON.parse(p.stdout);
      assert.equal(rotated.username, 'csv-nodes');
      // The running server's next login check sees the change at once.
      assert.equal(await server.service.products.authenticateSftp('csv-nodes', oldPassword), null);
      assert.equal((await server.service.products.authenticateSftp('csv-nodes', rotated.password))?.id, 'csv-nodes');
      assert.equal(await server.service.products.authenticateSftp('nobody', rotated.password), null);

      const list = JSON.parse(pier('staff', 'list', '--json').stdout) as { productId: string; state: string }[];
      assert.deepEqual(list.map((x) => x.productId).sort(), ['csv-nodes', 'rot-ext']);
      assert.ok(list.every((x) => x.state === 'hidden'));

      const shown = JSON.parse(pier('staff', 'show', 'rot-ext', '--history', '--json').stdout);
      assert.equal(shown.state, 'hidden');
      assert.deepEqual(shown.fieldsSet, ['name', 'description']);
      assert.equal(shown.revisions.length, 2);
      assert.deepEqual(shown.revisions[0].changedFields, ['description']);
      assert.equal(shown.revisions[0].clientAddress, '127.0.0.1');
      const human = pier('staff', 'show', 'rot-ext', '--history');
      assert.match(human.stdout, /state:\s+hidden/);
      assert.match(human.stdout, /description/);
      assert.doesNotMatch(human.stdout + JSON.stringify(shown), /pier_et_/);

      const rel = pier('staff', 'set-release', '5.4', '--json');
      assert.deepEqual(JSON.parse(rel.stdout), { platformRelease: '5.4' });
      assert.equal(await server.service.products.platformRelease(), '5.4');
      assert.notEqual(pier('staff', 'set-release', 'five').code, 0);
    });

    test('register --icon sanitizes the SVG file', async () => {
      const fs = await import('node:fs');
      const file = `${tempDir()}/icon.svg`;
      fs.writeFileSync(file, '<svg xmlns="http://www.w3.org/2000/svg"><script>x</script><rect width="1" height="1"/></svg>');
      const r = pier('staff', 'register', 'icon-ext', '--name', 'Icon', '--icon', file, '--json');
      assert.equal(r.code, 0, r.stderr);
      const view = await server.service.products.show('icon-ext');
      assert.match(String(view.fields.icon), /<rect/);
      assert.doesNotMatch(String(view.fields.icon), /script/);
      const bad = pier('staff', 'register', 'icon-bad', '--name', 'Icon', '--icon', '/no/such/file.svg');
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /cannot read icon file/);
    });
  });
}

test('a bad setting stops the CLI with a message naming the variable', () => {
  const r = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'list'], {
    env: { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: 'mysql://nope' },
    encoding: 'utf8',
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /PIER_DATABASE_URL/);
});
