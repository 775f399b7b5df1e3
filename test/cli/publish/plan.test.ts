import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { LabelFiles } from '../../../src/cli/publish/api.js';
import type { LocalTree } from '../../../src/cli/publish/local-site.js';
import { isMetadata, planUpload } from '../../../src/cli/publish/plan.js';

/** A tree as path → contents (files) plus folders; every file's and folder's parents are folders. */
interface Tree {
  files: Map<string, string>;
  folders: Set<string>;
}

const parentsOf = (p: string) => p.split('/').slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join('/'));

/** Random trees over a small name space, so local and remote share paths, and a path is a file in one and a folder in the other. */
const treeArb = fc
  .array(fc.tuple(fc.array(fc.constantFrom('a', 'b', 'content.jar', 'plugins', 'x.jar'), { minLength: 1, maxLength: 3 }), fc.constantFrom('1', '2'), fc.boolean()), { maxLength: 12 })
  .map((entries) => {
    const t: Tree = { files: new Map(), folders: new Set() };
    for (const [segments, data, isFolder] of entries) {
      const p = segments.join('/');
      // A path cannot be both, nor lie below a file.
      if (t.files.has(p) || t.folders.has(p) || parentsOf(p).some((d) => t.files.has(d))) continue;
      if ([...t.files.keys(), ...t.folders].some((q) => q.startsWith(`${p}/`)) && !isFolder) continue;
      for (const d of parentsOf(p)) t.folders.add(d);
      if (isFolder) t.folders.add(p);
      else t.files.set(p, data);
    }
    return t;
  });

const local = (t: Tree): LocalTree => ({
  root: '/site',
  files: [...t.files].map(([path, data]) => ({ path, abs: `/site/${path}`, size: data.length, sha256: `sha-${data}` })),
  folders: [...t.folders],
  problems: [],
});
const remote = (t: Tree, listFolders: boolean): LabelFiles => ({
  label: '5.4',
  files: [...t.files].map(([path, data]) => ({ path, size: data.length, sha256: `sha-${data}` })),
  ...(listFolders ? { folders: [...t.folders] } : {}),
});

/** Plays the plan against `server` as an SFTP server would take it, refusing what it would refuse. */
function apply(server: Tree, plan: ReturnType<typeof planUpload>, site: Tree): void {
  const parentOk = (p: string) => parentsOf(p).every((d) => server.folders.has(d));
  const empty = (d: string) => ![...server.files.keys(), ...server.folders].some((q) => q.startsWith(`${d}/`));
  for (const f of plan.clearFirst.files) assert.ok(server.files.delete(f), `remove ${f}: no such file`);
  for (const d of plan.clearFirst.folders) {
    assert.ok(empty(d), `rmdir ${d}: not empty`);
    assert.ok(server.folders.delete(d), `rmdir ${d}: no such folder`);
  }
  for (const d of plan.mkdirs) {
    assert.ok(parentOk(d), `mkdir ${d}: no parent`);
    assert.ok(!server.files.has(d), `mkdir ${d}: a file is there`);
    server.folders.add(d);
  }
  for (const f of plan.uploads) {
    assert.ok(parentOk(f.path), `put ${f.path}: no parent`);
    assert.ok(!server.folders.has(f.path), `put ${f.path}: a folder is there`);
    server.files.set(f.path, site.files.get(f.path) as string);
  }
  for (const f of plan.deletes) assert.ok(server.files.delete(f), `remove ${f}: no such file`);
  for (const d of plan.rmdirs) {
    assert.ok(empty(d), `rmdir ${d}: not empty`);
    server.folders.delete(d);
  }
}

describe('planUpload', () => {
  test('applied to any server state, the plan leaves the label folder equal to the site, in an order an SFTP server takes, uploading only what differs', () => {
    fc.assert(
      fc.property(treeArb, treeArb, fc.boolean(), (site, generated, listFolders) => {
        // A copy: the plan is played against it (fast-check may reuse generated values).
        const server: Tree = { files: new Map(generated.files), folders: new Set(generated.folders) };
        // A server that lists no folders: only those holding files can be known (and removed).
        if (!listFolders) server.folders = new Set([...server.files.keys()].flatMap(parentsOf));
        const plan = planUpload(local(site), remote(server, listFolders));
        const unchanged = [...site.files].filter(([p, d]) => server.files.get(p) === d && !server.folders.has(p)).length;
        apply(server, plan, site);
        assert.deepEqual(new Map([...server.files].sort()), new Map([...site.files].sort()));
        assert.deepEqual([...server.folders].sort(), [...site.folders].sort());
        assert.equal(plan.unchanged + plan.uploads.length, site.files.size);
        assert.equal(plan.unchanged, unchanged, 'every file the server has as it is stays; every other one is uploaded');
        // Metadata last: no artifact after the first metadata file.
        const first = plan.uploads.findIndex((f) => isMetadata(f.path));
        if (first >= 0) assert.ok(plan.uploads.slice(first).every((f) => isMetadata(f.path)));
      }),
      { numRuns: 2000 },
    );
  });

  test('same size and SHA-256: nothing to do; another SHA-256 at the same size: uploaded', () => {
    const site: Tree = { files: new Map([['plugins/a.jar', 'v1'], ['content.jar', 'm']]), folders: new Set(['plugins']) };
    assert.deepEqual(planUpload(local(site), remote(site, true)), { clearFirst: { files: [], folders: [] }, mkdirs: [], uploads: [], deletes: [], rmdirs: [], unchanged: 2 });
    const changed: Tree = { files: new Map([['plugins/a.jar', 'v2'], ['content.jar', 'm']]), folders: new Set(['plugins']) };
    const plan = planUpload(local(changed), remote(site, true));
    assert.deepEqual(plan.uploads.map((f) => f.path), ['plugins/a.jar']);
  });
});
