import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { boundaryOf, boundaryProblem } from '../../src/runner/api/multipart.js';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, type TestRunner } from './helpers.js';

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

/** Every file below a directory (recursively), relative to it. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}

for (const target of dialects()) {
  describe(`multipart uploads (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;

    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    const storage = () => r.config.runner.storageDir;

    /** The three multipart routes, each with a valid request's parts (the lease of a fresh claim for outputs). */
    async function routes(): Promise<{ name: string; url: string; method: 'POST' | 'PUT'; headers: Record<string, string>; parts: Parameters<typeof multipart>[0] }[]> {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      const data = Buffer.from('output bytes\n');
      return [
        { name: 'workflow upload', method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: bearer(f.session), parts: [{ name: 'file', file: makeZip() }] },
        { name: 'new version', method: 'POST', url: `/api/workflows/${f.workflowId}/versions`, headers: bearer(f.session), parts: [{ name: 'file', file: makeZip() }] },
        {
          name: 'output upload',
          method: 'PUT',
          url: `/api/runs/${run.id}/outputs/result.csv`,
          headers: apiKey(API_KEY),
          parts: [
            { name: 'leaseToken', value: leaseOf(c).leaseToken },
            { name: 'attempt', value: String(leaseOf(c).attempt) },
            { name: 'sha256', value: sha(data) },
            { name: 'file', file: data, filename: 'result.csv' },
          ],
        },
      ];
    }

    test('malformed multipart bodies get 400 problem+json on every multipart route, and store nothing', async () => {
      const before = filesUnder(storage());
      for (const route of await routes()) {
        const good = multipart(route.parts);
        const boundary = /boundary=(.*)$/.exec(good.headers['content-type']!)![1]!;
        const long = 'b'.repeat(200);
        const cases: { label: string; type: string; payload: Buffer }[] = [
          { label: 'no boundary', type: 'multipart/form-data', payload: good.payload },
          { label: 'empty boundary', type: 'multipart/form-data; boundary=', payload: good.payload },
          { label: 'truncated body', type: good.headers['content-type']!, payload: good.payload.subarray(0, good.payload.length - 30) },
          { label: 'cut inside the headers', type: good.headers['content-type']!, payload: good.payload.subarray(0, 40) },
          { label: '200-character boundary', type: `multipart/form-data; boundary=${long}`, payload: Buffer.from(good.payload.toString('latin1').replaceAll(boundary, long), 'latin1') },
          { label: '300-character boundary', type: `multipart/form-data; boundary=${'c'.repeat(300)}`, payload: Buffer.from(good.payload.toString('latin1').replaceAll(boundary, 'c'.repeat(300)), 'latin1') },
          { label: 'boundary not in the body', type: 'multipart/form-data; boundary=other', payload: good.payload },
          { label: 'part without headers', type: good.headers['content-type']!, payload: Buffer.from(`--${boundary}\r\nno colon here\r\n\r\nx\r\n--${boundary}--\r\n`) },
        ];
        for (const c of cases) {
          const res = await f.inject({ method: route.method, url: route.url, headers: { ...route.headers, 'content-type': c.type }, payload: c.payload });
          assert.equal(res.statusCode, 400, `${route.name}, ${c.label}: ${res.body}`);
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/, `${route.name}, ${c.label}`);
          const problem = res.json();
          assert.equal(problem.status, 400);
          assert.ok(problem.errors?.length >= 1 && problem.errors[0].field, `${route.name}, ${c.label}: names a field: ${res.body}`);
        }
      }
      assert.deepEqual(filesUnder(storage()), before);
    });

    /** A multipart body whose file part names its file in RFC 5987 form (any character, percent-encoded). */
    function withFilename(fileName: string, fields: { name: string; value: string }[] = []) {
      const boundary = 'pierboundary42';
      const head = fields.map((p) => `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`).join('');
      const payload = Buffer.concat([
        Buffer.from(`${head}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${encodeURIComponent(fileName)}\r\n\r\n`),
        makeZip(),
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
    }

    /** The per-workflow folders of the archive storage. */
    const workflowFolders = () => {
      const dir = path.join(storage(), 'workflows');
      return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
    };

    test('an upload refused while its parts are read (not a zip, a field too many after the file) leaves no folder', async () => {
      const folders = workflowFolders();
      const bodies = [
        multipart([{ name: 'file', file: Buffer.from('junk, not a zip'), filename: 'notzip.knwf' }]),
        multipart([{ name: 'file', file: makeZip() }, { name: 'surprise', value: '1' }]),
        multipart([{ name: 'file', file: makeZip() }, { name: 'name', value: 'x'.repeat(300) }]),
      ];
      for (const m of bodies) {
        const res = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
        assert.equal(res.statusCode, 400, res.body);
      }
      assert.deepEqual(workflowFolders(), folders);
    });

    const workflowNames = async () =>
      (await f.inject({ method: 'GET', url: `/api/projects/${f.projectId}/workflows`, headers: bearer(f.session) })).json().items.map((w: { name: string }) => w.name);

    test('the workflow name follows the Name rule of the JSON routes: control characters and escapes are refused, nothing is stored', async () => {
      const names = await workflowNames();
      const files = filesUnder(storage());
      const folders = workflowFolders();
      // C1 controls (U+0085) and bidirectional formatting (U+202E turns `fwnk.gpj` into `jpg.knwf` on screen) too.
      const bad = ['\u001b[31mred\u001b[0m', 'two\nlines', 'tab\there', 'bell\u0007', 'del\u007f', '   ', 'x'.repeat(201), 'next\u0085line', '\u202efwnk.gpj', 'iso\u2066late', 'mark\u200f'];
      for (const name of bad) {
        // The same value in a JSON body is refused by the project route's Name: the rule is one.
        const json = await f.inject({ method: 'POST', url: '/api/projects', headers: bearer(f.session), payload: { name } });
        assert.equal(json.statusCode, 400, `JSON ${JSON.stringify(name)}`);
        const m = multipart([{ name: 'name', value: name }, { name: 'file', file: makeZip() }]);
        const res = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
        assert.equal(res.statusCode, 400, `${JSON.stringify(name)}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        assert.equal(res.json().code, json.json().code);
        assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field), ['name']);
        // No name field: the default, the file name without .knwf, follows the rule too.
        const byFile = withFilename(`${name}.knwf`);
        const res2 = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...byFile.headers }, payload: byFile.payload });
        assert.equal(res2.statusCode, 400, `file name ${JSON.stringify(name)}: ${res2.body}`);
        // (The parser drops a file part whose name holds a line break: then the file is missing.)
        const field = name.includes('\n') ? 'file' : 'name';
        assert.deepEqual(res2.json().errors.map((e: { field: string }) => e.field), [field], `${JSON.stringify(name)} ${res2.body}`);
      }
      assert.deepEqual(await workflowNames(), names);
      assert.deepEqual(filesUnder(storage()), files);
      assert.deepEqual(workflowFolders(), folders, 'a refused upload leaves no folder behind');
      // A fine name with blanks around it is stored trimmed, as the JSON routes do.
      const m = multipart([{ name: 'name', value: '  Nightly ETL \u00e9  ' }, { name: 'description', value: 'line one\nline two' }, { name: 'file', file: makeZip() }]);
      const ok = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
      assert.equal(ok.statusCode, 201, ok.body);
      assert.equal(ok.json().name, 'Nightly ETL \u00e9');
      assert.equal(ok.json().description, 'line one\nline two');
    });

    test('the workflow description follows the JSON description rule (at most 10,000 characters), never silently cut', async () => {
      const names = await workflowNames();
      const long = multipart([{ name: 'description', value: 'd'.repeat(10_001) }, { name: 'file', file: makeZip() }]);
      const res = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...long.headers }, payload: long.payload });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field), ['description']);
      assert.deepEqual(await workflowNames(), names);
      // 10,000 characters of two bytes each are fine, as in JSON.
      const wide = multipart([{ name: 'description', value: '\u00e9'.repeat(10_000) }, { name: 'file', file: makeZip() }]);
      const ok = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), ...wide.headers }, payload: wide.payload });
      assert.equal(ok.statusCode, 201, ok.body.slice(0, 300));
      assert.equal(ok.json().description, '\u00e9'.repeat(10_000));
    });

    test('a new version takes no name: a name field is refused and the workflow keeps its name', async () => {
      const m = multipart([{ name: 'name', value: '\u001b[2Jx' }, { name: 'file', file: makeZip() }]);
      const res = await f.inject({ method: 'POST', url: `/api/workflows/${f.workflowId}/versions`, headers: { ...bearer(f.session), ...m.headers }, payload: m.payload });
      assert.equal(res.statusCode, 400, res.body);
      assert.deepEqual(res.json().errors.map((e: { field: string }) => e.field), ['name']);
      const wf = await f.inject({ method: 'GET', url: `/api/workflows/${f.workflowId}`, headers: bearer(f.session) });
      assert.equal(wf.json().name, 'w');
      assert.equal(wf.json().latestVersion, 1);
    });

    test('an output upload with a part too many stores nothing: no row, no download, no file', async () => {
      const run = await f.start();
      const c = (await f.claim(await f.register())).claim!;
      const data = Buffer.from('result bytes\n');
      const proof = [
        { name: 'leaseToken', value: leaseOf(c).leaseToken },
        { name: 'attempt', value: String(leaseOf(c).attempt) },
        { name: 'sha256', value: sha(data) },
        { name: 'file', file: data, filename: 'result.csv' },
      ];
      const extras: { label: string; parts: Parameters<typeof multipart>[0] }[] = [
        { label: 'a text field after the file', parts: [...proof, { name: 'extra', value: '1' }] },
        { label: 'a second file', parts: [...proof, { name: 'file', file: data, filename: 'again.csv' }] },
        { label: 'a file of another name', parts: [...proof, { name: 'other', file: data, filename: 'x.csv' }] },
        { label: 'a lease field again', parts: [...proof, { name: 'attempt', value: '1' }] },
      ];
      for (const e of extras) {
        const m = multipart(e.parts);
        const res = await f.inject({ method: 'PUT', url: `/api/runs/${run.id}/outputs/result.csv`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: m.payload });
        assert.equal(res.statusCode, 400, `${e.label}: ${res.body}`);
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
        const listed = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs`, headers: bearer(f.session) });
        assert.deepEqual(listed.json().items, [], e.label);
        const got = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/result.csv`, headers: bearer(f.session) });
        assert.equal(got.statusCode, 404, e.label);
        assert.deepEqual(filesUnder(path.join(storage(), 'outputs')), [], e.label);
      }
      // The same upload without the extra part is stored.
      const m = multipart(proof);
      const ok = await f.inject({ method: 'PUT', url: `/api/runs/${run.id}/outputs/result.csv`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: m.payload });
      assert.equal(ok.statusCode, 200, ok.body);
      const got = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/result.csv`, headers: bearer(f.session) });
      assert.equal(got.body, data.toString());
    });

    test('a quoted boundary of 70 characters is a valid multipart body', async () => {
      const good = multipart([{ name: 'file', file: makeZip() }]);
      const boundary = /boundary=(.*)$/.exec(good.headers['content-type']!)![1]!;
      const b70 = `'()+_,-./:=? ${'x'.repeat(57)}`;
      assert.equal(b70.length, 70);
      const payload = Buffer.from(good.payload.toString('latin1').replaceAll(boundary, b70), 'latin1');
      const res = await f.inject({
        method: 'POST',
        url: `/api/projects/${f.projectId}/workflows`,
        headers: { ...bearer(f.session), 'content-type': `multipart/form-data; boundary="${b70}"` },
        payload,
      });
      assert.equal(res.statusCode, 201, res.body);
    });
  });
}

describe('multipart boundary rule (RFC 2046 §5.1.1)', () => {
  const BCHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'()+_,-./:=? ".split('');
  const bchars = (min: number, max: number) => fc.array(fc.constantFrom(...BCHARS), { minLength: min, maxLength: max }).map((a) => a.join(''));

  test('1-70 bchars not ending in a space are accepted, plain or quoted', () => {
    fc.assert(
      fc.property(bchars(1, 70).filter((b) => !b.endsWith(' ')), (b) => {
        const quoted = `multipart/form-data; boundary="${b}"`;
        assert.equal(boundaryOf(quoted), b);
        assert.equal(boundaryProblem(quoted), null);
        if (!/[ ()+,/:=?]/.test(b)) assert.equal(boundaryProblem(`multipart/form-data; charset=utf-8; boundary=${b}`), null);
      }),
    );
  });

  test('longer than 70, ending in a space, or with any other character: refused', () => {
    fc.assert(fc.property(bchars(71, 400), (b) => assert.notEqual(boundaryProblem(`multipart/form-data; boundary="${b}"`), null)));
    fc.assert(fc.property(bchars(0, 69), (b) => assert.notEqual(boundaryProblem(`multipart/form-data; boundary="${b} "`), null)));
    fc.assert(
      fc.property(bchars(0, 30), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => !BCHARS.includes(c) && c !== '"'), bchars(0, 30), (a, c, z) => {
        assert.notEqual(boundaryProblem(`multipart/form-data; boundary="${a}${c}${z}"`), null);
      }),
    );
    fc.assert(fc.property(fc.string({ maxLength: 100 }), (s) => {
      // Never throws, whatever the header holds.
      boundaryProblem(s);
    }));
    assert.notEqual(boundaryProblem('multipart/form-data'), null);
    assert.notEqual(boundaryProblem('multipart/form-data; boundary='), null);
  });
});
