import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { namesConfigurationFactory, type Steps } from '../../src/runner/workflows/configuration-factory.js';
import { isolatedDeclaredReader } from '../../src/runner/workflows/isolated-declared.js';
import { MAX_SETTINGS_BYTES, readConfigurationSettings } from '../../src/runner/workflows/settings-entries.js';
import { dialects, tempDir } from '../helpers/db.js';
import { bearer, knwfWithConfigurationNodes, makeZipOf, multipart, nodeSettings, SETUP_TOKEN, startRunner } from './helpers.js';

/** The check as a backtracking pattern: the reference the linear scan must agree with. */
const REFERENCE = /key="factory"[^>]*value="[^"]*(?:\.(?:configuration|quickform|dialog)\.|VariableInput)/i;

/** At most this many looks per character: one, and a bounded look-ahead for the fixed words. */
const STEPS_PER_CHAR = 60;

/** Text made of the pieces the check looks for, in any case, with the characters that end them. */
const FRAGMENTS = [
  'key="factory"',
  'KEY="Factory"',
  'key="factor"',
  'key="factory',
  'value="',
  'VALUE="',
  'valu',
  'e="',
  '.configuration.',
  '.CONFIGURATION.',
  '.configuration',
  '.quickform.',
  '.Dialog.',
  '.dialog',
  'VariableInput',
  'variableinpu',
  'ContainerVariableInput',
  '.',
  '>',
  '"',
  ' ',
  '\n',
  'x',
  // Letters that fold to ASCII only under Unicode case folding: never equal to k, s or i here.
  '\u212a',
  '\u017f',
  '\u0131',
  '\u0130',
];
const crafted = fc.oneof(
  fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 40 }).map((a) => a.join('')),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
);

function stepsOf(text: string): number {
  const steps: Steps = { count: 0 };
  namesConfigurationFactory(text, steps);
  return steps.count;
}

/** Fills about `bytes` with `unit`, as the crafted settings.xml of the report did. */
const repeat = (unit: string, bytes: number) => unit.repeat(Math.max(1, Math.floor(bytes / unit.length)));

describe('the check that picks configuration nodes settings.xml files is linear', () => {
  test('property: it agrees with the backtracking pattern on any text', () => {
    fc.assert(
      fc.property(crafted, (text) => {
        assert.equal(namesConfigurationFactory(text), REFERENCE.test(text), JSON.stringify(text));
      }),
      { numRuns: 3000 },
    );
    // Real settings: a configuration node's, and another node's.
    assert.equal(namesConfigurationFactory(nodeSettings('org.knime.js.base.node.configuration.input.string.StringDialogNodeFactory', '')), true);
    assert.equal(namesConfigurationFactory(nodeSettings('org.knime.base.node.io.filehandling.csv.reader.CSVTableReaderNodeFactory', '')), false);
  });

  test('crafted settings (the backtracking pattern is quadratic on them) cost a bounded number of steps per character', () => {
    const units = [
      'key="factory"value="',
      'key="factory" value="',
      'key="factory"value=".configuratio',
      'key="factory"value="VariableInpu.quickfor',
      'value=".dialo',
      'key="factory"',
    ];
    for (const unit of units) {
      const small = repeat(unit, MAX_SETTINGS_BYTES / 2);
      const large = repeat(unit, MAX_SETTINGS_BYTES);
      // Every character is looked at (the count is real), and only a bounded number of times.
      assert.ok(stepsOf(large) >= large.length, unit);
      assert.ok(stepsOf(large) <= STEPS_PER_CHAR * large.length, `${unit}: ${stepsOf(large)} steps for ${large.length} characters`);
      // Twice the text, twice the work (within the one unit a floor may drop).
      assert.ok(stepsOf(large) <= 2 * stepsOf(small) + STEPS_PER_CHAR * unit.length, unit);
      assert.equal(namesConfigurationFactory(large), false, unit);
      assert.equal(namesConfigurationFactory(`${large}.configuration.`), REFERENCE.test(`${unit}.configuration.`), unit);
    }
  });

  test('an archive of 64 crafted settings.xml files (16 MiB inflated, a few KB zipped) is read in bounded steps and declares nothing', async () => {
    const dir = tempDir('pier-declared-');
    const file = path.join(dir, 'crafted.knwf');
    const text = repeat('key="factory"value="', MAX_SETTINGS_BYTES - 64);
    const zip = makeZipOf(Array.from({ length: 64 }, (_, i): [string, string] => [`W/Node (#${i})/settings.xml`, text]));
    assert.ok(zip.length < 64 * 1024, `${zip.length} bytes zipped`);
    fs.writeFileSync(file, zip);
    assert.deepEqual(await readConfigurationSettings(file), []);
    assert.ok(stepsOf(text) * 64 <= STEPS_PER_CHAR * 16 * 1024 * 1024);
  });
});

describe('the settings of configuration nodes are parsed in a worker thread, within limits', () => {
  const dir = tempDir('pier-declared-');
  const file = path.join(dir, 'w.knwf');
  fs.writeFileSync(file, knwfWithConfigurationNodes());
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('a parse past its time limit declares nothing, and the next upload is read again by a fresh worker', async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    // The limit counts from the read, and a worker's start on a loaded machine takes seconds.
    const reader = isolatedDeclaredReader({ timeoutMs: 10_000, hold });
    try {
      assert.deepEqual(await reader.read(file), []);
      assert.equal(Atomics.load(hold, 1), 1, 'the parse ran in the worker');
      Atomics.store(hold, 0, 1);
      assert.deepEqual(
        (await reader.read(file)).map((p) => p.name),
        ['dry', 'mode', 'ratio', 'rows', 'title'],
      );
    } finally {
      Atomics.store(hold, 0, 1);
      Atomics.notify(hold, 0);
      await reader.close();
    }
  });

  for (const target of dialects()) {
    test(`while an upload's settings are parsed, the server answers other requests (${target.name})`, async () => {
      const db = await target.create();
      const hold = new Int32Array(new SharedArrayBuffer(8));
      const r = await startRunner({ databaseUrl: db.url, declaredHold: hold });
      const inject = r.service.app.inject.bind(r.service.app);
      try {
        const setup = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: 'a long enough password' } })).json();
        const admin = bearer(setup.session.token);
        const project = (await inject({ method: 'POST', url: '/api/projects', headers: admin, payload: { name: 'P' } })).json();
        const upload = multipart([{ name: 'file', file: knwfWithConfigurationNodes(), filename: 'Report.knwf' }]);
        let answered = false;
        const created = inject({ method: 'POST', url: `/api/projects/${project.id}/workflows`, headers: { ...admin, ...upload.headers }, payload: upload.payload }).then((res) => {
          answered = true;
          return res;
        });
        // The parse holds its thread; the serving loop keeps answering.
        for (let i = 0; Atomics.load(hold, 1) === 0; i++) {
          assert.ok(i < 1500 && !answered, 'the parse never reached its worker');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const me = await inject({ method: 'GET', url: '/api/me', headers: admin });
        assert.equal(me.statusCode, 200);
        assert.equal(answered, false, 'the upload waits for its parse');
        Atomics.store(hold, 0, 1);
        Atomics.notify(hold, 0);
        const res = await created;
        assert.equal(res.statusCode, 201, res.body);
        assert.deepEqual(
          res.json().versions[0].declaredParameters.map((p: { name: string }) => p.name),
          ['dry', 'mode', 'ratio', 'rows', 'title'],
        );
      } finally {
        Atomics.store(hold, 0, 1);
        Atomics.notify(hold, 0);
        await r.close();
        await db.drop();
      }
    });
  }
});
