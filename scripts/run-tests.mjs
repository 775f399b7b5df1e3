#!/usr/bin/env node
// Runs every test file under test/ with node:test via tsx (Node 20's --test does not expand
// globs). In CI a skipped test fails the run: a missing tool must never pass silently.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildServer } from './build-server.mjs';
import { currentBuild } from './build-state.mjs';

function collect(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return collect(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const filters = process.argv.slice(2);
const files = collect('test')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
// The runner serves its web UI from dist/ui: build it from the sources under test first.
const build = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-ui.ts'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
// Tests that spawn bin/pier.js run the compiled program, as users do: build it once here, so no
// test pays for (or races on) the rebuild bin/pier.js would otherwise make of stale sources.
if (!currentBuild(process.cwd()).entry) await buildServer({ log: (line) => console.error(line) });
// `pier serve` keeps answering /readyz 503 for PIER_DRAIN_DELAY_SECONDS after SIGTERM (for a
// balancer); the tests that stop a server want it gone at once (the drain test sets its own).
const env = { ...process.env, PIER_DRAIN_DELAY_SECONDS: process.env.PIER_DRAIN_DELAY_SECONDS ?? '0' };
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let tail = '';
let output = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4000);
  if (output.length < 64 * 1024 * 1024) output += chunk.toString();
});

// CI shows only the end of a long run: repeat each failure (its name and error block) last.
function failureSummary(text) {
  const lines = text.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (!/^\s*not ok \d+ - /.test(line)) return;
    out.push(line);
    for (let j = i + 1; j < Math.min(lines.length, i + 40); j++) {
      out.push(lines[j]);
      if (/^\s*\.\.\.$/.test(lines[j])) break;
    }
  });
  return out.slice(0, 400);
}

child.on('close', (code) => {
  const failures = failureSummary(output);
  if (failures.length > 0) {
    console.log('# ---- failures, repeated from above ----');
    for (const line of failures) console.log(`# ${line}`);
  }
  const skipped = Number(/# skipped (\d+)/.exec(tail)?.[1] ?? 0);
  const inCi = process.env.CI === 'true' || process.env.CI === '1';
  if (code === 0 && inCi && skipped > 0) {
    console.error(`CI: ${skipped} test(s) skipped; in CI every suite must run`);
    process.exit(1);
  }
  process.exit(code ?? 1);
});
