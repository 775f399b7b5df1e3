import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { unzipInto } from '../../src/runner/executor-agent/unzip.js';
import { tempDir } from '../helpers/db.js';

describe('workflow archive unpacking', () => {
  test('unpacks entries; refuses entries that point outside the work directory', async () => {
    const dir = tempDir();
    const good = path.join(dir, 'good.zip');
    fs.writeFileSync(good, zipSync({ 'wf/workflow.knime': new TextEncoder().encode('<w/>'), 'wf/data/a.csv': new TextEncoder().encode('1') }));
    await unzipInto(good, path.join(dir, 'out'));
    assert.equal(fs.readFileSync(path.join(dir, 'out/wf/workflow.knime'), 'utf8'), '<w/>');
    assert.equal(fs.readFileSync(path.join(dir, 'out/wf/data/a.csv'), 'utf8'), '1');
    const evil = path.join(dir, 'evil.zip');
    // fflate writes names as given: a "zip slip" entry.
    fs.writeFileSync(evil, zipSync({ '../escaped.txt': new TextEncoder().encode('x') }));
    await assert.rejects(unzipInto(evil, path.join(dir, 'out2')), /outside|invalid relative path|absolute path/);
    assert.equal(fs.existsSync(path.join(dir, 'escaped.txt')), false);
  });
});
