// `pier staff` says which data directory and publishing database it uses, and a command that
// only reads (or changes an existing product) refuses to create a database: run in another
// folder without PIER_DATA_DIR it no longer makes `./data` and answers "No products yet".
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { dialects, tempDir } from '../helpers/db.js';

const PIER = path.resolve('bin/pier.js');

/** `pier staff …` in `cwd` with none of the data settings of this process, plus `env`. */
function staff(cwd: string, env: Record<string, string>, ...args: string[]) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PIER_|RUNNER_)/.test(k)));
  const r = spawnSync(process.execPath, [PIER, 'staff', ...args], { cwd, env: { ...base, ...env }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('run in a folder without a data directory: reading commands refuse and create nothing; register says it creates one', () => {
  const cwd = fs.realpathSync(tempDir('pier-staff-cwd-'));
  const expected = path.join(cwd, 'data', 'pier.sqlite');
  for (const args of [['list'], ['list', '--json'], ['show', 'acme'], ['trust', 'list', 'acme'], ['crawl', 'acme'], ['enable', 'acme']]) {
    const r = staff(cwd, {}, ...args);
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '', args.join(' '));
    assert.ok(r.stderr.includes(expected), `${args.join(' ')} names the database: ${r.stderr}`);
    assert.match(r.stderr, /PIER_DATA_DIR is unset/);
    assert.match(r.stderr, /Nothing was created/);
    assert.doesNotMatch(r.stderr, /No products yet/);
    assert.deepEqual(fs.readdirSync(cwd), [], `${args.join(' ')} created nothing in the working directory`);
  }

  const reg = staff(cwd, {}, 'register', 'acme', '--name', 'Acme', '--json');
  assert.equal(reg.code, 0, reg.stderr);
  assert.equal(JSON.parse(reg.stdout).productId, 'acme', 'stdout stays the JSON answer');
  assert.ok(reg.stderr.includes(`creating a new publishing database ${expected}`), reg.stderr);
  assert.ok(fs.existsSync(expected));

  const list = staff(cwd, {}, 'list');
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^acme\s/);
  assert.ok(list.stderr.includes(`publishing database ${expected}; data directory ${path.join(cwd, 'data')} (PIER_DATA_DIR is unset`), list.stderr);
});

test('with PIER_DATA_DIR: the message names it as the source', () => {
  const dataDir = tempDir('pier-staff-data-');
  const cwd = tempDir('pier-staff-cwd-');
  assert.equal(staff(cwd, { PIER_DATA_DIR: dataDir }, 'register', 'acme', '--name', 'Acme').code, 0);
  const r = staff(cwd, { PIER_DATA_DIR: dataDir }, 'show', 'acme');
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stderr.includes(`publishing database ${path.join(dataDir, 'pier.sqlite')}; data directory ${dataDir} (PIER_DATA_DIR)`), r.stderr);
});

for (const target of dialects().filter((d) => d.name === 'postgres')) {
  test('PostgreSQL: a database without Pier\'s tables is not migrated by a reading command; the password is not shown', async () => {
    const db = await target.create();
    try {
      const url = new URL(db.url);
      url.password = 'sekrit-pw';
      url.username = url.username || 'postgres';
      const cwd = tempDir('pier-staff-cwd-');
      const r = staff(cwd, { PIER_DATABASE_URL: url.toString(), PIER_DATA_DIR: tempDir('pier-staff-data-') }, 'list');
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /no publishing database postgres:\/\/.*\*\*\*@.* \(PIER_DATABASE_URL\) exists yet/);
      assert.doesNotMatch(r.stderr, /sekrit-pw/);
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        const tables = await c.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'");
        assert.equal(tables.rows[0].n, 0, 'no table was created');
      } finally {
        await c.end();
      }
      const reg = staff(cwd, { PIER_DATABASE_URL: db.url, PIER_DATA_DIR: tempDir('pier-staff-data-') }, 'register', 'acme', '--name', 'Acme');
      assert.equal(reg.code, 0, reg.stderr);
      assert.match(reg.stderr, /creating a new publishing database postgres:/);
      const list = staff(cwd, { PIER_DATABASE_URL: db.url, PIER_DATA_DIR: tempDir('pier-staff-data-') }, 'list');
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^acme\s/);
    } finally {
      await db.drop();
    }
  });
}
