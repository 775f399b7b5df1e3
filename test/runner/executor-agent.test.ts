import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { zipSync } from 'fflate';
import { expandTemplate, shellQuote } from '../../src/runner/executor-agent/template.js';
import { unzipInto } from '../../src/runner/executor-agent/unzip.js';
import { tempDir } from '../helpers/db.js';

const values = { archive: '/w/a.knwf', workDir: '/w', workflowDir: '/w/workflow', outDir: '/w/out', runId: 'r1', attempt: '2', parameters: {} };

describe('executor command template', () => {
  test('placeholders expand to single shell words; unknown ones are an error', () => {
    assert.equal(
      expandTemplate('knime -batch {archive} -dest {out}/x -run {runId}#{attempt} {param.rows}', { ...values, parameters: { rows: 5 } }),
      "knime -batch '/w/a.knwf' -dest '/w/out'/x -run 'r1'#'2' '5'",
    );
    assert.equal(expandTemplate('echo {param.missing}', values), "echo ''");
    assert.throws(() => expandTemplate('echo {nope}', values), /unknown placeholder \{nope\}/);
  });

  test('property: a parameter value reaches the command as exactly that one argument, whatever it contains', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\u0000')), (value) => {
        const command = expandTemplate('printf %s {param.v}', { ...values, parameters: { v: value } });
        const out = execFileSync('/bin/sh', ['-c', command], { encoding: 'utf8' });
        assert.equal(out, value);
      }),
      { numRuns: 60 },
    );
    assert.equal(shellQuote("it's"), `'it'\\''s'`);
  });
});

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
