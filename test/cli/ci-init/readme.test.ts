import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { detectBuild } from '../../../src/cli/ci-init/detect.js';
import { githubWorkflow } from '../../../src/cli/ci-init/github.js';
import { tempDir } from '../../helpers/db.js';
import { tychoRepo } from './repos.js';

test("README's Publishing from CI shows the workflow pier ci init writes, unchanged", () => {
  const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../../README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Publishing from CI'));
  assert.ok(section.length > 0, 'README has a "Publishing from CI" section');
  const shown = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(shown, 'the section shows the workflow');
  const generated = githubWorkflow(detectBuild(tychoRepo(tempDir('ci-readme-'), { module: 'site' })), { product: 'my-extension', server: 'https://pier.example.com', audience: null });
  assert.equal(shown, generated);
  assert.match(section, /node pier\.mjs ci init --github --product my-extension --server https:\/\/pier\.example\.com/);
});
