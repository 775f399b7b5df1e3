import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { parameterOfSettings, parameterProblems } from '../../src/runner/workflows/declared-parameters.js';
import { isolatedDeclaredReader } from '../../src/runner/workflows/isolated-declared.js';
import { dialects, tempDir } from '../helpers/db.js';
import { bearer, knwfWithConfigurationNodes, makeZip, makeZipOf, multipart, nodeSettings, SETUP_TOKEN, startRunner } from './helpers.js';

const PASSWORD = 'a long enough password';
const DECLARED = [
  { name: 'dry', type: 'boolean', default: true, label: '', description: '' },
  { name: 'mode', type: 'string', default: 'fast', label: '', description: '', choices: ['fast', 'thorough'] },
  { name: 'ratio', type: 'number', default: 0.25, label: '', description: '' },
  { name: 'rows', type: 'integer', default: 100, label: 'Rows to read', description: 'How many rows the reader takes <at most>', minimum: -2147483648, maximum: 2147483647 },
  { name: 'title', type: 'string', default: 'Monthly <b>report</b>', label: '', description: '' },
];

const reader = isolatedDeclaredReader();
after(() => reader.close());
const readDeclaredParameters = (file: string) => reader.read(file);

describe('parameters declared by configuration nodes', () => {
  test('read from the settings of each configuration node in the archive; other nodes declare nothing', async () => {
    const dir = tempDir('pier-declared-');
    const file = path.join(dir, 'w.knwf');
    fs.writeFileSync(file, knwfWithConfigurationNodes());
    assert.deepEqual(await readDeclaredParameters(file), DECLARED);
  });

  test('hostile archives and settings declare nothing and never throw: not a zip, a DTD, a huge entry, a bad name', async () => {
    const dir = tempDir('pier-declared-');
    const write = (name: string, data: Buffer) => {
      fs.writeFileSync(path.join(dir, name), data);
      return path.join(dir, name);
    };
    assert.deepEqual(await readDeclaredParameters(write('a.knwf', Buffer.from('PK\u0003\u0004 not really a zip'))), []);
    const factory = 'org.knime.js.base.node.configuration.input.string.StringDialogNodeFactory';
    const dtd = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>${nodeSettings(factory, '<entry key="parameterName" type="xstring" value="&b;"/>').replace(/^<\?xml[^>]*>/, '')}`;
    assert.equal(parameterOfSettings(dtd), null);
    const huge = nodeSettings(factory, `<entry key="parameterName" type="xstring" value="big"/><entry key="description" type="xstring" value="${'x'.repeat(2 * 1024 * 1024)}"/>`);
    assert.deepEqual(await readDeclaredParameters(write('b.knwf', makeZipOf([['W/N (#1)/settings.xml', huge]]))), []);
    const bad = nodeSettings(factory, '<entry key="parameterName" type="xstring" value="a&#x202e;b"/>');
    assert.equal(parameterOfSettings(bad), null);
    for (const name of ['__proto__', 'constructor', 'prototype']) assert.equal(parameterOfSettings(nodeSettings(factory, `<entry key="parameterName" type="xstring" value="${name}"/>`)), null, name);
    // Labels, descriptions, defaults and choices keep no controls or bidirectional overrides.
    const odd = parameterOfSettings(
      nodeSettings(
        factory,
        '<entry key="parameterName" type="xstring" value="x"/><entry key="label" type="xstring" value="&#x202e;lebal"/><entry key="description" type="xstring" value="a&#x0;b&#x1b;c"/><config key="defaultValue"><entry key="string" type="xstring" value="&#x2066;d"/></config>',
      ),
    );
    assert.deepEqual([odd?.label, odd?.description, odd?.default], ['lebal', 'abc', 'd']);
    assert.deepEqual(await readDeclaredParameters(write('c.knwf', makeZip())), []);
  });

  test('property: any text as settings.xml gives a parameter or null, never an exception', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (junk) => {
        const r = parameterOfSettings(nodeSettings('org.knime.js.base.node.configuration.input.string.StringDialogNodeFactory', junk));
        assert.ok(r === null || typeof r.name === 'string');
        assert.ok(parameterOfSettings(junk) === null || typeof parameterOfSettings(junk)!.name === 'string');
      }),
      { numRuns: 300 },
    );
  });

  test('a run\'s values are checked against the declared types and choices; undeclared names pass', () => {
    const declared = DECLARED as Parameters<typeof parameterProblems>[0];
    assert.deepEqual(parameterProblems(declared, { rows: 10, ratio: '0.5', dry: 'false', mode: 'thorough', title: 42, other: 'x' }), []);
    assert.deepEqual(
      parameterProblems(declared, { rows: 1.5, ratio: 'abc', dry: 'yes', mode: 'slow' }).map((p) => p.field),
      ['parameters/dry', 'parameters/mode', 'parameters/ratio', 'parameters/rows'],
    );
    assert.deepEqual(parameterProblems(declared, { rows: null }), []);
  });
});

for (const target of dialects()) {
  test(`an uploaded version lists its declared parameters and runs are checked against them (${target.name})`, async () => {
    const db = await target.create();
    const r = await startRunner({ databaseUrl: db.url });
    const inject = r.service.app.inject.bind(r.service.app);
    try {
      const admin = bearer((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token);
      const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
      const upload = multipart([{ name: 'file', file: knwfWithConfigurationNodes(), filename: 'Report.knwf' }]);
      const created = await inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload });
      assert.equal(created.statusCode, 201, created.body);
      assert.deepEqual(created.json().versions[0].declaredParameters, DECLARED);
      const id = created.json().id;
      const plain = multipart([{ name: 'file', file: makeZip() }]);
      const v2 = await inject({ method: 'POST', url: `/api/workflows/${id}/versions`, headers: { ...admin, ...plain.headers }, payload: plain.payload });
      assert.deepEqual(v2.json().declaredParameters, []);

      const start = (body: object) => inject({ method: 'POST', url: `/api/workflows/${id}/runs`, headers: admin, payload: body });
      const bad = await start({ version: 1, parameters: { rows: 'many', mode: 'slow' } });
      assert.equal(bad.statusCode, 400);
      assert.deepEqual(bad.json().errors.map((e: { field: string }) => e.field), ['parameters/mode', 'parameters/rows']);
      assert.equal((await start({ version: 1, parameters: { rows: 10, mode: 'thorough', dry: false } })).statusCode, 201);
      // Version 2 declares nothing: any value goes.
      assert.equal((await start({ parameters: { rows: 'many' } })).statusCode, 201);
    } finally {
      await r.close();
      await db.drop();
    }
  });
}
