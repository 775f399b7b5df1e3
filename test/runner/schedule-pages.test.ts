import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { dialects } from '../helpers/db.js';
import { bearer, makeZip, multipart, SETUP_TOKEN, startRunner } from './helpers.js';

const PASSWORD = 'a long enough password';

interface Listed {
  id: string;
  projectId: string;
  workflowId: string;
  createdAt: string;
  workflowName: string;
}

/** The list order: creation, then id for schedules created in the same millisecond. */
const byCreation = (a: Listed, b: Listed) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

for (const target of dialects()) {
  describe(`GET /api/schedules is paged by a cursor (${target.name})`, () => {
    test("120 schedules of a member's two projects in pages of 50: each once, in order, none of another project; bad cursor or limit is a 400 naming it", async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        await inject({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'ann@example.com', password: PASSWORD } });
        const ann = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'ann@example.com', password: PASSWORD } })).json().token);
        const workflowIn = async (auth: Record<string, string>, project: string, name: string) => {
          const upload = multipart([{ name: 'file', file: makeZip() }, { name: 'name', value: name }]);
          return (await inject({ method: 'POST', url: `/api/projects/${project}/workflows`, headers: { ...auth, ...upload.headers }, payload: upload.payload })).json() as { id: string };
        };
        const projectOf = async (auth: Record<string, string>, name: string) => (await inject({ method: 'POST', url: '/api/projects', headers: auth, payload: { name } })).json() as { id: string };
        const [a, b, root] = [await projectOf(ann, 'A'), await projectOf(ann, 'B'), await projectOf(admin, 'Root')];
        const flows = [await workflowIn(ann, a.id, 'A one'), await workflowIn(ann, a.id, 'A two'), await workflowIn(ann, b.id, 'B one'), await workflowIn(ann, b.id, 'B two')];
        const rootFlow = await workflowIn(admin, root.id, 'Root');
        const created: Listed[] = [];
        const create = async (auth: Record<string, string>, flowId: string, i: number) => {
          const res = await inject({ method: 'POST', url: `/api/workflows/${flowId}/schedules`, headers: auth, payload: { cron: `${i % 60} 2 * * *`, name: `s${i}` } });
          assert.equal(res.statusCode, 201, res.body);
          return res.json() as Listed;
        };
        // The projects interleave in time, and three schedules share each millisecond: the order
        // falls back to the id within one instant, and the pages cross from project to project.
        for (let i = 0; i < 120; i++) {
          created.push(await create(ann, flows[i % 4]!.id, i));
          if (i % 9 === 4) created.push(await create(admin, rootFlow.id, i));
          if (i % 3 === 2) r.clock.advance(1);
        }
        const visible = created.filter((s) => s.projectId !== root.id).sort(byCreation);
        assert.equal(visible.length, 120);

        const walk = async (auth: Record<string, string>, query: string) => {
          const pages: Listed[][] = [];
          let cursor: string | null = null;
          do {
            const url: string = `/api/schedules?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
            const res: LightMyRequestResponse = await inject({ method: 'GET', url, headers: auth });
            assert.equal(res.statusCode, 200, res.body);
            const body = res.json() as { items: Listed[]; nextCursor: string | null };
            pages.push(body.items);
            cursor = body.nextCursor;
            assert.ok(pages.length <= 10, 'the cursor moves on');
          } while (cursor !== null);
          return pages;
        };
        const pages = await walk(ann, 'limit=50');
        assert.deepEqual(pages.map((p) => p.length), [50, 50, 20]);
        assert.deepEqual(pages.flat().map((s) => s.id), visible.map((s) => s.id));
        assert.ok(pages.flat().every((s) => /^[AB] (one|two)$/.test(s.workflowName)), 'each with its workflow name');

        // One project, one workflow, and the administrator's list of all: each in order, complete.
        assert.deepEqual((await walk(ann, `project=${b.id}&limit=7`)).flat().map((s) => s.id), visible.filter((s) => s.projectId === b.id).map((s) => s.id));
        assert.deepEqual((await walk(ann, `workflow=${flows[1]!.id}&limit=200`)).flat().map((s) => s.id), visible.filter((s) => s.workflowId === flows[1]!.id).map((s) => s.id));
        const all = await walk(admin, 'limit=200');
        assert.deepEqual(all.flat().map((s) => s.id), [...created].sort(byCreation).map((s) => s.id));
        assert.deepEqual((await walk(ann, `project=${root.id}`)).flat(), []);

        // Without a limit a page holds 50: the answer never grows with the schedules there are.
        const first = (await inject({ method: 'GET', url: '/api/schedules', headers: admin })).json() as { items: Listed[]; nextCursor: string | null };
        assert.equal(first.items.length, 50);
        assert.equal(typeof first.nextCursor, 'string');

        const problem = async (query: string) => {
          const res = await inject({ method: 'GET', url: `/api/schedules?${query}`, headers: ann });
          assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
          assert.match(String(res.headers['content-type']), /application\/problem\+json/);
          return (res.json() as { errors: { field: string }[] }).errors[0]!.field;
        };
        const b64 = (s: string) => Buffer.from(s).toString('base64url');
        for (const cursor of ['nope', b64('[1,2]'), b64('["x"]'), b64('{"a":1}'), b64('["2030-01-01T00:00:00.000Z","a\\u0000b"]'), '%00']) {
          assert.equal(await problem(`cursor=${encodeURIComponent(cursor)}`), 'cursor', cursor);
        }
        for (const limit of ['0', '201', '-1', '1.5', 'abc', '']) assert.equal(await problem(`limit=${limit}`), 'limit', limit);
      } finally {
        await r.close();
        await db.drop();
      }
    });

    test('property: any cursor text is a page or a 400 naming `cursor`, never a 5xx', async () => {
      const db = await target.create();
      const r = await startRunner({ databaseUrl: db.url });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
        const cursorText = fc.oneof(
          fc.string({ maxLength: 60 }),
          fc.tuple(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 })).map((t) => Buffer.from(JSON.stringify(t)).toString('base64url')),
          fc.jsonValue({ maxDepth: 2 }).map((v) => Buffer.from(JSON.stringify(v)).toString('base64url')),
        );
        await fc.assert(
          fc.asyncProperty(cursorText, async (cursor) => {
            const res = await inject({ method: 'GET', url: `/api/schedules?cursor=${encodeURIComponent(cursor)}`, headers: admin });
            if (res.statusCode === 200) assert.deepEqual(res.json(), { items: [], nextCursor: null });
            else {
              assert.equal(res.statusCode, 400, res.body);
              assert.equal(res.json().errors[0].field, 'cursor', res.body);
            }
          }),
          { numRuns: 60 },
        );
      } finally {
        await r.close();
        await db.drop();
      }
    });
  });
}
