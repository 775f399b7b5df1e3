import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { configVariables } from '../../src/infra/config.js';

test('configVariables lists every environment variable the config reads, the secrets included', () => {
  const listed = configVariables();
  for (const name of ['JWT_SECRET', 'API_KEY', 'RUNNER_DATABASE_URL', 'PIER_DATABASE_URL', 'PIER_DATA_DIR', 'RUNNER_STORAGE_DIR', 'PIER_PAGE_RENDER_TIMEOUT_SECONDS']) {
    assert.ok(listed.includes(name), `${name} is missing`);
  }
  // Every name the config module mentions, so a read that happens only under a condition
  // (which the recording cannot see) fails here rather than leaking into commands.
  const source = fs.readFileSync(new URL('../../src/infra/config.ts', import.meta.url), 'utf8');
  const mentioned = new Set(source.match(/\b(?:PIER|RUNNER)_[A-Z0-9_]+\b|\bAPI_KEY\b|\bJWT_SECRET\b/g));
  assert.deepEqual([...mentioned].filter((name) => !listed.includes(name)), []);
  assert.ok(!listed.includes('PATH') && !listed.includes('HOME'));
});
