import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrate, openDatabase } from '../../../src/infra/database/index.js';
import { type PublishingDB, publishingMigrations } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { trustRepository } from '../../../src/publishing/trust/repository.js';
import { trustService } from '../../../src/publishing/trust/service.js';
import { dialects } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { githubClaims, gitlabClaims, type LocalIssuer, startIssuer } from './issuer.js';

const AUDIENCE = 'http://pier.test';

async function exchange(url: string, token: string): Promise<{ status: number; fields: string[] }> {
  const res = await fetch(`${url}/api/oidc/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
  const json = (await res.json()) as { errors?: { field: string }[] };
  return { status: res.status, fields: (json.errors ?? []).map((e) => e.field) };
}

for (const target of dialects()) {
  describe(`trusted publishing: a bound ref is a branch or a tag, protected unless allowed, on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let server: RunningPublishing;

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      server = await startPublishing(db.url, { failureLimits: { maxFailures: 10_000 } }, { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url });
      const { products, trust } = server.service;
      for (const id of ['gl-main', 'gl-open', 'gh-main']) await products.register(id, { name: id });
      // `pier staff trust add gl-main --gitlab … --ref main`: the branch main.
      await trust.addBinding('gl-main', { provider: 'gitlab', repository: 'acme/main-nodes', repositoryId: '5001', ownerId: '72', ref: 'main' });
      await trust.addBinding('gl-open', { provider: 'gitlab', repository: 'acme/open-nodes', repositoryId: '5002', ownerId: '72', ref: 'main', allowUnprotected: true });
      await trust.addBinding('gh-main', { provider: 'github', repository: 'octo-org/gh-main', repositoryId: '5003', ownerId: '9919', workflow: '.github/workflows/release.yml', ref: 'main' });
    });
    after(async () => {
      await server?.close();
      await issuer?.close();
      await db?.drop();
    });

    const gitlab = (project: string, id: string, refType: 'branch' | 'tag', refProtected: 'true' | 'false') =>
      issuer.sign(
        gitlabClaims(AUDIENCE, {
          project_path: project,
          project_id: id,
          ref: 'main',
          ref_type: refType,
          ref_path: `refs/${refType === 'tag' ? 'tags' : 'heads'}/main`,
          ref_protected: refProtected,
          sub: `project_path:${project}:ref_type:${refType}:ref:main`,
        }),
      );

    test('GitLab --ref main: the protected branch main publishes; an unprotected tag named main does not', async () => {
      assert.deepEqual(await exchange(server.url, await gitlab('acme/main-nodes', '5001', 'tag', 'false')), { status: 403, fields: ['ref_type', 'ref_protected'] });
      assert.deepEqual(await exchange(server.url, await gitlab('acme/main-nodes', '5001', 'tag', 'true')), { status: 403, fields: ['ref_type'] });
      assert.deepEqual(await exchange(server.url, await gitlab('acme/main-nodes', '5001', 'branch', 'false')), { status: 403, fields: ['ref_protected'] });
      assert.deepEqual((await exchange(server.url, await gitlab('acme/main-nodes', '5001', 'branch', 'true'))).status, 200);
    });

    test('a binding staff allowed unprotected refs takes the unprotected branch, still never the tag', async () => {
      assert.equal((await exchange(server.url, await gitlab('acme/open-nodes', '5002', 'branch', 'false'))).status, 200);
      assert.deepEqual(await exchange(server.url, await gitlab('acme/open-nodes', '5002', 'tag', 'false')), { status: 403, fields: ['ref_type'] });
    });

    test('GitHub --ref main is refs/heads/main: a workflow run for the tag refs/tags/main is refused', async () => {
      const claims = (ref: string) => githubClaims(AUDIENCE, { repository: 'octo-org/gh-main', repository_id: '5003', ref, ref_type: ref.startsWith('refs/tags/') ? 'tag' : 'branch' });
      const tagRun = claims('refs/tags/main');
      delete tagRun.environment;
      assert.deepEqual(await exchange(server.url, await issuer.sign(tagRun)), { status: 403, fields: ['ref'] });
      const branchRun = claims('refs/heads/main');
      delete branchRun.environment;
      assert.equal((await exchange(server.url, await issuer.sign(branchRun))).status, 200);
    });
  });

  describe(`migration 0016 (bound ref kinds) on ${target.name}`, () => {
    test('a bare ref bound before keeps meaning a branch; full refs stay; bindings refuse unprotected refs', async () => {
      const handle = await target.create();
      const database = openDatabase<PublishingDB>(handle.url);
      try {
        const { db } = database;
        await migrate(db, 'pier', Object.fromEntries(Object.entries(publishingMigrations).filter(([name]) => name < '0016')));
        const at = '2026-01-01T00:00:00.000Z';
        await db
          .insertInto('products')
          .values({ id: 'p', name: 'P', state: 'live', fields: '{}', edit_token_hash: 'h', edit_token_id: 't', sftp_username: 'p', sftp_password_hash: 'x', created_at: at, updated_at: at })
          .execute();
        const old = (id: string, ref: string | null) => ({
          id,
          product_id: 'p',
          provider: 'gitlab',
          repository: 'acme/x',
          repository_id: '1',
          owner_id: null,
          workflow: null,
          ref,
          environment: null,
          created_at: `${at.slice(0, -5)}${id.slice(-1)}00Z`,
          owner_pinned_at: null,
        });
        const raw = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
        await raw.insertInto('trust_bindings').values([old('tb_1', 'main'), old('tb_2', 'refs/tags/v1.2.0'), old('tb_3', 'refs/heads/dev'), old('tb_4', null)]).execute();
        await migrate(db, 'pier', publishingMigrations);
        const trust = trustService({ repo: trustRepository(db), products: productsRepository(db, target.name), oidc: { audience: AUDIENCE, githubIssuer: 'x', gitlabIssuer: 'y' } });
        const bindings = await trust.listBindings('p');
        assert.deepEqual(
          bindings.map((b) => [b.id, b.ref, b.allowUnprotected]),
          [
            ['tb_1', 'refs/heads/main', false],
            ['tb_2', 'refs/tags/v1.2.0', false],
            ['tb_3', 'refs/heads/dev', false],
            ['tb_4', null, false],
          ],
        );
      } finally {
        await database.close();
        await handle.drop();
      }
    });
  });
}
