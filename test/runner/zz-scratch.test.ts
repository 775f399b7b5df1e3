import { test } from 'node:test';
import { protocolFixture } from '/work/wt/r-data/test/runner/executor-fixtures.js';
import { bearer, makeZip, multipart, startRunner } from '/work/wt/r-data/test/runner/helpers.js';
test('x', async () => {
  const r = await startRunner({ env: { PIER_LOG_LEVEL: 'error' } });
  const f = await protocolFixture(r);
  const good = multipart([{ name: 'file', file: makeZip() }]);
  const boundary = /boundary=(.*)$/.exec(good.headers['content-type']!)![1]!;
  const long = 'b'.repeat(200);
  const cases = [
    ['nob', 'multipart/form-data', good.payload],
    ['trunc', good.headers['content-type'], good.payload.subarray(0, good.payload.length - 30)],
    ['hdr', good.headers['content-type'], good.payload.subarray(0, 40)],
    ['long', `multipart/form-data; boundary=${long}`, Buffer.from(good.payload.toString('latin1').replaceAll(boundary, long), 'latin1')],
    ['empty', good.headers['content-type'], Buffer.alloc(0)],
  ] as const;
  for (const [l, t, p] of cases) {
    const res = await f.inject({ method: 'POST', url: `/api/projects/${f.projectId}/workflows`, headers: { ...bearer(f.session), 'content-type': t }, payload: p });
    console.log(l, res.statusCode, res.body);
  }
  await r.close();
});
