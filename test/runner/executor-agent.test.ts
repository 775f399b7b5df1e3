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

  test('writes through no symbolic link found in the folder: one in place of a directory or of a file is refused, nothing lands outside', async () => {
    const dir = tempDir();
    const outside = path.join(dir, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'original');
    const archive = path.join(dir, 'a.zip');
    const enc = new TextEncoder();
    fs.writeFileSync(archive, zipSync({ 'wf/workflow.knime': enc.encode('<w/>'), 'wf/d/owned.txt': enc.encode('attacker bytes') }));
    // A directory of the archive swapped for a link (as a process left by an earlier run would).
    const intoDir = path.join(dir, 'out-dir');
    fs.mkdirSync(path.join(intoDir, 'wf'), { recursive: true });
    fs.symlinkSync(outside, path.join(intoDir, 'wf/d'));
    await assert.rejects(unzipInto(archive, intoDir), /wf\/d is not a directory \(a symbolic link\)/);
    assert.deepEqual(fs.readdirSync(outside), ['keep.txt']);
    // A file of the archive swapped for a link to a file elsewhere.
    const file = path.join(dir, 'f.zip');
    fs.writeFileSync(file, zipSync({ 'wf/keep.txt': enc.encode('attacker bytes') }));
    const intoFile = path.join(dir, 'out-file');
    fs.mkdirSync(path.join(intoFile, 'wf'), { recursive: true });
    fs.symlinkSync(path.join(outside, 'keep.txt'), path.join(intoFile, 'wf/keep.txt'));
    await assert.rejects(unzipInto(file, intoFile), /is there already/);
    assert.equal(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'original');
    // A dangling link is refused too (O_EXCL): it would create the file where it points.
    const dangling = path.join(dir, 'out-dangling');
    fs.mkdirSync(path.join(dangling, 'wf'), { recursive: true });
    fs.symlinkSync(path.join(outside, 'new.txt'), path.join(dangling, 'wf/keep.txt'));
    await assert.rejects(unzipInto(file, dangling), /is there already/);
    assert.equal(fs.existsSync(path.join(outside, 'new.txt')), false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
