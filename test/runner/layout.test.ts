import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

// API routes, and the web pages' routes (login, consent, connected apps).
const routeFiles = [
  ...fs.readdirSync('src/runner/api').filter((f) => f.endsWith('-routes.ts')).map((f) => path.join('src/runner/api', f)),
  path.join('src/runner/web', 'routes.ts'),
];

test('runner route files stay thin: no SQL, no repositories, no other route file', () => {
  assert.ok(routeFiles.length >= 6, routeFiles.join(', '));
  const problems: string[] = [];
  for (const file of routeFiles) {
    const text = fs.readFileSync(file, 'utf8');
    const imports = [...text.matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
    for (const i of imports) {
      if (/(-routes|\/routes)\.js$/.test(i)) problems.push(`${file} imports the route file ${i}`);
      if (/repository\.js$/.test(i)) problems.push(`${file} imports the repository ${i}: go through a service`);
    }
    if (/\b(selectFrom|insertInto|updateTable|deleteFrom|sql`)/.test(text)) problems.push(`${file} holds SQL`);
    if (/Repository\b/.test(text)) problems.push(`${file} names a repository`);
  }
  assert.deepEqual(problems, []);
});
