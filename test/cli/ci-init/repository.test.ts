import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { repositoryPath } from '../../../src/cli/ci-init/repository.js';

test('the repository from the origin remote, in the forms git accepts', () => {
  const cases: [string, { host: string; path: string } | null][] = [
    ['git@github.com:example/example-nodes.git', { host: 'github.com', path: 'example/example-nodes' }],
    ['https://github.com/example/example-nodes', { host: 'github.com', path: 'example/example-nodes' }],
    ['https://github.com/example/example-nodes.git/', { host: 'github.com', path: 'example/example-nodes' }],
    ['ssh://git@gitlab.example.com:2222/group/sub/project.git', { host: 'gitlab.example.com', path: 'group/sub/project' }],
    ['https://token@GitLab.com/group/project.git', { host: 'gitlab.com', path: 'group/project' }],
    ['/srv/git/project.git', null],
    ['https://github.com/only-owner', null],
    ['not a url', null],
  ];
  for (const [url, expected] of cases) assert.deepEqual(repositoryPath(url), expected, url);
});

test('property: any owner/repo round-trips through the ssh and https forms; nothing else gets through', () => {
  const name = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/).filter((s) => !s.endsWith('.git') && s !== '.' && s !== '..');
  fc.assert(
    fc.property(name, name, (owner, repo) => {
      assert.deepEqual(repositoryPath(`git@github.com:${owner}/${repo}.git`), { host: 'github.com', path: `${owner}/${repo}` });
      assert.deepEqual(repositoryPath(`https://github.com/${owner}/${repo}`), { host: 'github.com', path: `${owner}/${repo}` });
    }),
  );
  fc.assert(
    fc.property(fc.string(), (s) => {
      const r = repositoryPath(s);
      // Whatever comes out goes into a printed shell line: plain path characters only.
      if (r) assert.match(r.path, /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)+$/);
    }),
  );
});
