/**
 * `pier runner executor` loads only the executor's own modules: a restarted executor is back at
 * work without loading the server (fastify, the databases, the publishing service), which took
 * seconds on a busy machine (src/cli/index.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

/** Every module of this repository `entry` can load (static imports and `import()`), and every package. */
function moduleGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?:type\s)?[^'"]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)|^import\s+'([^']+)'/gm)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      // Type-only imports are erased: they load nothing.
      if (/^\s*(?:import|export)\s+type\s/.test(m[0].trim())) continue;
      if (spec.startsWith('node:')) continue;
      if (!spec.startsWith('.')) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
        continue;
      }
      const resolved = path.resolve(path.dirname(file), spec);
      const candidates = [resolved.replace(/\.js$/, '.ts'), resolved.replace(/\.js$/, '.tsx'), resolved];
      const found = candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
      assert.ok(found, `${file} imports ${spec}, which was not found`);
      if (found.endsWith('.ts') || found.endsWith('.tsx') || found.endsWith('.mjs')) visit(found);
    }
  };
  visit(path.resolve(entry));
  return { files, packages };
}

test('pier runner executor loads no module of the server: only the executor agent, the CLI glue and small infra modules', () => {
  const { files, packages } = moduleGraph('src/cli/executor-command.ts');
  const relative = [...files].map((f) => path.relative(process.cwd(), f)).sort();
  const allowed = (f: string) =>
    f.startsWith('src/runner/executor-agent/') ||
    ['src/cli/executor-command.ts', 'src/cli/exposed-secret.ts', 'src/infra/errors.ts', 'src/infra/config.ts', 'src/infra/config-values.ts', 'src/infra/platform-categories.ts'].includes(f);
  assert.deepEqual(relative.filter((f) => !allowed(f)), [], 'modules outside the executor');
  assert.ok(relative.includes('src/runner/executor-agent/agent.ts'));
  assert.deepEqual([...packages].filter((p) => !['commander', 'yauzl'].includes(p)), [], 'packages besides commander and yauzl');
});

test('the command line sends `runner executor` to that command alone, and the help of the rest still lists it', () => {
  const index = fs.readFileSync('src/cli/index.ts', 'utf8');
  assert.match(index, /process\.argv\[2\] === 'runner' && process\.argv\[3\] === 'executor'/);
  const help = execFileSync(process.execPath, ['bin/pier.js', 'runner', 'executor', '--help'], { encoding: 'utf8' });
  assert.match(help, /--run-as <users>/);
  assert.match(execFileSync(process.execPath, ['bin/pier.js', 'runner', '--help'], { encoding: 'utf8' }), /executor \[options\]/);
});
