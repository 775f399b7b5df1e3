import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pkg from '../../package.json' with { type: 'json' };

/** Every file that may import a package. */
function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(p);
    return /\.(ts|tsx|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** Packages used without an import: command-line tools and type declarations. */
const TOOLS = new Set(['@biomejs/biome', 'typescript']);
test('every declared dependency is used (imported) somewhere, or is a tool', () => {
  const text = ['src', 'test', 'bench', 'bin', 'scripts'].filter((d) => fs.existsSync(d)).flatMap(sources).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const declared = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)];
  const unused = declared.filter((name) => {
    if (TOOLS.has(name) || name.startsWith('@types/')) return false;
    const quoted = new RegExp(`['"]${name.replace(/[/.-]/g, '\\$&')}(/[^'"]*)?['"]`);
    return !quoted.test(text);
  });
  assert.deepEqual(unused, []);
});
