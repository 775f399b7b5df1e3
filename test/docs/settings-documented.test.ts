/**
 * The documentation by audience: README.md stays a short entry point, every setting
 * is documented once in the operators' guide, and no relative link in README.md or docs/*.md
 * points at a file or heading that does not exist.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { configVariables } from '../../src/infra/config.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OPERATORS = path.join(ROOT, 'docs', 'operators.md');

function read(file: string): string {
  return fs.readFileSync(file, 'utf8');
}

/** The text without fenced code blocks (their lines become empty, so line numbers stay). */
function withoutFences(markdown: string): string {
  let fence: string | null = null;
  return markdown
    .split('\n')
    .map((line) => {
      const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
      if (fence === null && m) {
        fence = m[1]!;
        return '';
      }
      if (fence !== null) {
        if (line.trim().startsWith(fence[0]!.repeat(fence.length)) && line.trim().replace(/[`~]/g, '') === '') fence = null;
        return '';
      }
      return line;
    })
    .join('\n');
}

/** Code spans (`x`, `` x ``) removed: what looks like a link inside them is not one. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?[^`]\1(?!`)/g, '');
}

/**
 * The "## Settings" section of the operators' guide (up to the next level-2 heading), and the
 * names it documents: a table row or a list entry that starts with the name in backticks.
 */
function documentedSettings(): Set<string> {
  const text = withoutFences(read(OPERATORS));
  const start = text.search(/^## Settings\s*$/m);
  assert.ok(start >= 0, 'docs/operators.md has no "## Settings" section');
  const rest = text.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end >= 0 ? rest.slice(0, end) : rest;
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const m = /^\s*(?:\||[-*]|\d+\.)\s*`([A-Z][A-Z0-9_]*)`/.exec(line);
    if (m) names.add(m[1]!);
  }
  return names;
}

function assertDocumented(names: string[], what: string): void {
  const documented = documentedSettings();
  const missing = names.filter((name) => !documented.has(name));
  assert.deepEqual(
    missing,
    [],
    `docs/operators.md, section "Settings", does not document ${what}: ${missing.join(', ')} ` +
      '(add a table row or list entry starting with `NAME`)',
  );
}

test('every variable loadConfig reads is documented in the operators\' Settings', () => {
  const names = configVariables();
  assert.ok(names.length > 30, 'configVariables() returned suspiciously few names');
  assertDocumented(names, 'these variables read by src/infra/config.ts');
});

test('every PIER_/RUNNER_ variable src/ reads outside config.ts (CLI, executor) is documented', () => {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(entry.name)) {
        for (const m of read(p).matchAll(/process\.env\.((?:PIER|RUNNER)_[A-Z0-9_]+)\b/g)) names.add(m[1]!);
        // Names kept in a constant and read as process.env[CONSTANT] (src/cli/part-process.ts).
        for (const m of read(p).matchAll(/_ENV\s*=\s*'((?:PIER|RUNNER)_[A-Z0-9_]+)'/g)) names.add(m[1]!);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  assert.ok(names.has('PIER_EXECUTOR_URL'), 'the scan found no executor variables; did src/cli/runner.ts move?');
  assertDocumented([...names].sort(), 'these variables read from the environment in src/');
});

/** Every heading's GitHub anchor in a Markdown file. */
function anchors(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const result = new Set<string>();
  for (const line of withoutFences(read(file)).split('\n')) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m) result.add(slugger.slug(m[1]!));
  }
  return result;
}

test('every relative link in README.md and docs/*.md resolves to a file and heading', () => {
  const files = [
    path.join(ROOT, 'README.md'),
    ...fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => path.join(ROOT, 'docs', name)),
  ];
  assert.ok(files.length >= 5, 'expected README.md and four guides');
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    const text = withoutCodeSpans(withoutFences(read(file)));
    // Inline links and images: [text](target "title") / ![alt](target).
    for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      checked++;
      const where = `${path.relative(ROOT, file)}: ${target}`;
      const hash = target.indexOf('#');
      const filePart = decodeURIComponent(hash >= 0 ? target.slice(0, hash) : target);
      const anchor = hash >= 0 ? decodeURIComponent(target.slice(hash + 1)) : null;
      const resolved = filePart === '' ? file : path.resolve(path.dirname(file), filePart);
      if (!fs.existsSync(resolved)) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (anchor !== null) {
        if (!resolved.endsWith('.md')) broken.push(`${where} (an anchor into a file that is not Markdown)`);
        else if (!anchors(resolved).has(anchor)) broken.push(`${where} (no heading with this anchor)`);
      }
    }
  }
  assert.ok(checked > 20, `only ${checked} relative links found: is the link pattern still right?`);
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
});

test('README.md stays short: under 1,500 words', () => {
  const words = read(path.join(ROOT, 'README.md')).split(/\s+/).filter(Boolean).length;
  assert.ok(words < 1500, `README.md has ${words} words; move detail into a guide under docs/`);
});
