import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { needsTool } from '../helpers/tools.js';
import { startRunner, SETUP_TOKEN } from './helpers.js';

const BIN = path.resolve('bin/pier.js');

function pier(args: string[], input: string, env: Record<string, string>) {
  return spawnSync(process.execPath, [BIN, ...args], { input, env: { ...process.env, ...env }, encoding: 'utf8' });
}

test('pier runner user add creates a user the server can log in', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-cli-'));
  const env = { PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'silent' };
  try {
    const res = pier(['runner', 'user', 'add', '--email', 'Root@Example.com', '--name', 'Root', '--admin', '--json'], 'cli password 123\nignored\n', env);
    assert.equal(res.status, 0, res.stderr);
    const user = JSON.parse(res.stdout);
    assert.equal(user.email, 'root@example.com');
    assert.equal(user.role, 'admin');
    assert.equal(user.name, 'Root');

    const dup = pier(['runner', 'user', 'add', '--email', 'root@example.com'], 'cli password 123\n', env);
    assert.equal(dup.status, 1);
    assert.match(dup.stderr, /already exists/);
    const short = pier(['runner', 'user', 'add', '--email', 'x@example.com'], 'short\n', env);
    assert.equal(short.status, 1);
    assert.match(short.stderr, /10-1024 characters/);

    const r = await startRunner({ dataDir });
    try {
      const login = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'root@example.com', password: 'cli password 123' } });
      assert.equal(login.statusCode, 200, login.body);
      // A user exists, so the first-run setup is closed.
      const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'cli password 123' } });
      assert.equal(setup.statusCode, 409);
    } finally {
      await r.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

/**
 * Runs `pier` on a pseudo-terminal (util-linux `script`), answering each prompt once it shows:
 * whatever the terminal echoes ends up in the output.
 */
function onTerminal(args: string[], answers: [RegExp, string][], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  const pending = [...answers];
  const onOutput = (d: Buffer) => {
    output += d.toString();
    const next = pending[0];
    if (next?.[0].test(output)) {
      pending.shift();
      child.stdin.write(`${next[1]}\r`);
    }
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

test('on a terminal the password is asked twice and never echoed', needsTool('script'), async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-cli-'));
  const env = { PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'silent' };
  try {
    const prompts: [RegExp, string][] = [
      [/password: $/, 'typed secret 123'],
      [/password \(again\): $/, 'typed secret 123'],
    ];
    const res = await onTerminal(['runner', 'user', 'add', '--email', 'tty@example.com'], prompts, env);
    assert.equal(res.code, 0, res.output);
    assert.ok(!res.output.includes('typed secret'), `the password was echoed: ${JSON.stringify(res.output)}`);
    assert.match(res.output, /created member tty@example.com/);
    const mismatch = await onTerminal(['runner', 'user', 'add', '--email', 'two@example.com'], [[/password: $/, 'typed secret 123'], [/again\): $/, 'typed secret 124']], env);
    assert.equal(mismatch.code, 1);
    assert.match(mismatch.output, /do not match/);
    const r = await startRunner({ dataDir });
    try {
      const login = await r.service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'tty@example.com', password: 'typed secret 123' } });
      assert.equal(login.statusCode, 200, login.body);
    } finally {
      await r.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
