/**
 * Comments in the code say the rule or the reason themselves, or point at the doc section or RFC
 * that states it: a reader of the repository cannot open the tracker an issue number points into.
 * This scans every file under src/, scripts/ and bench/ for an issue number and names each hit.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCANNED = ['src', 'scripts', 'bench'];
/** "issue 8", "Issue #10", "issues 7", and "review of #8" (a bare "#5" is also cron syntax: `1#5`). */
const ISSUE_NUMBER = /\bissues? ?#?\d+|\breview of #\d+/i;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** `file:line: text` of every line that cites an issue number. */
function issueCitations(relativePath: string, text: string): string[] {
  const hits: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (ISSUE_NUMBER.test(line)) hits.push(`${relativePath}:${i + 1}: ${line.trim()}`);
  });
  return hits;
}

test('the pattern finds the usual spellings and leaves plain words alone', () => {
  for (const cited of ['// issue #8', '/* Issue 18 part 1 */', '(issue 20 contract)', 'issues 7 and 11', 'ISSUE#10', '(review of #8)']) {
    assert.equal(issueCitations('x.ts', cited).length, 1, cited);
  }
  for (const plain of ['// a known issue', 'reissue 3 tokens', 'issues: none', 'tissue 5', "cron: '0 0 * 2 1#5'"]) {
    assert.deepEqual(issueCitations('x.ts', plain), [], plain);
  }
  assert.deepEqual(issueCitations('a/b.ts', 'one\n  // see issue 21\n'), ['a/b.ts:2: // see issue 21']);
});

test('src/, scripts/ and bench/ cite no issue numbers', async () => {
  const hits: string[] = [];
  let scanned = 0;
  for (const dir of SCANNED) {
    for (const file of await filesUnder(path.join(ROOT, dir))) {
      scanned += 1;
      const relative = path.relative(ROOT, file).split(path.sep).join('/');
      hits.push(...issueCitations(relative, await readFile(file, 'utf8')));
    }
  }
  assert.ok(scanned > 100, `only ${scanned} files scanned: the scan must cover the source tree`);
  assert.deepEqual(hits, [], `comments cite issue numbers; say the rule, or cite the doc section or RFC:\n${hits.join('\n')}`);
});
