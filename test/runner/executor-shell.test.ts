// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell text
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { ExecutorAgent } from '../../src/runner/executor-agent/agent.js';
import { defaultShell, inspectShell } from '../../src/runner/executor-agent/shell.js';
import { compileTemplate, templateEnv, type TemplateValues } from '../../src/runner/executor-agent/template.js';
import { tempDir } from '../helpers/db.js';

const SUPERVISOR = fileURLToPath(new URL('../../src/runner/executor-agent/supervisor.mjs', import.meta.url));
const scratch = tempDir('pier-shell-');
after(() => fs.rmSync(scratch, { recursive: true, force: true }));
const values: TemplateValues = { archive: '/w/a.knwf', workDir: '/w', workflowDir: '/w/workflow', outDir: '/w/out', runId: 'r1', attempt: '2', parameters: {} };

/** Runs `command` under the supervisor with `shell`, as the executor does; resolves with its stdout. */
function supervise(shell: string, command: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SUPERVISOR, shell, command], { cwd: scratch, detached: true, stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', ...env } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    (child.stdio[3] as Readable).resume();
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

describe('the executor shell', () => {
  test('defaults to /bin/dash where it exists, and tells bash (which evaluates values reaching arithmetic) from dash', { skip: !fs.existsSync('/bin/dash') && 'no dash' }, () => {
    assert.equal(defaultShell(), '/bin/dash');
    assert.equal(inspectShell('/bin/dash').evaluatesValues, false);
    if (fs.existsSync('/bin/bash')) {
      const bash = inspectShell('/bin/bash');
      assert.equal(bash.evaluatesValues, true);
      assert.match(bash.kind, /^bash /);
    }
    assert.throws(() => inspectShell(path.join(scratch, 'no-such-shell')), /cannot run commands/);
  });

  test('the agent runs commands with --shell and says at start when that shell evaluates values as arithmetic', { skip: !fs.existsSync('/bin/bash') && 'no bash' }, async () => {
    const lines: [string, Record<string, unknown>][] = [];
    const base = { url: 'http://127.0.0.1:1', apiKey: 'k', name: 'e', labels: [], capacity: 1, workDir: scratch, command: 'true', killGraceSeconds: 1, log: (event: string, data?: Record<string, unknown>) => lines.push([event, data ?? {}]) };
    assert.equal(new ExecutorAgent(base).shell.path, defaultShell());
    const agent = new ExecutorAgent({ ...base, shell: '/bin/bash', giveUpMs: 1 });
    assert.equal(agent.shell.evaluatesValues, true);
    const running = agent.run().catch(() => {});
    await new Promise((r) => setTimeout(r, 200));
    agent.stop();
    agent.stop();
    await Promise.race([running, new Promise((r) => setTimeout(r, 3000))]);
    const started = lines.find(([event]) => event === 'started');
    assert.ok(started, JSON.stringify(lines));
    assert.equal(started[1].shell, '/bin/bash');
    assert.match(String(started[1].warning), /evaluates the contents of variables reaching arithmetic/);
  });

  test('with the default shell, a value reaching arithmetic through a variable runs nothing; the supervisor uses the shell it is given', { skip: !fs.existsSync('/bin/dash') && 'no dash' }, async () => {
    const marker = path.join(scratch, 'ran');
    const env = templateEnv({ ...values, parameters: { n: `a[$(touch ${marker})]` } });
    await supervise(defaultShell(), compileTemplate('x={param.n}; echo $(( x + 1 )) 2>/dev/null; [ "$x" -eq 1 ] 2>/dev/null; true'), env);
    assert.equal(fs.existsSync(marker), false);
    if (fs.existsSync('/bin/bash')) assert.match(await supervise('/bin/bash', 'printf %s "${BASH_VERSION-}"', {}), /^\d/);
  });
});
