import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { exited, protocolFixture, startExecutor } from './executor-fixtures.js';
import { API_KEY, apiKey, makeZip, startRunner, TestClock } from './helpers.js';

/** Leases and heartbeats of real processes run on the wall clock. */
const realClock = Object.assign(new TestClock(), { now: () => new Date(), advance: () => {} });

async function until(check: () => Promise<boolean> | boolean, what: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what()}`);
}

const target = dialects()[0]!;

describe(`the executor's cached workflow archives (${target.name})`, () => {
  test('a command that overwrites the cached archive, or swaps it or its directory for a symbolic link, does not change what later runs unpack', { timeout: 180_000 }, async () => {
    const dbh = await target.create();
    const r = await startRunner({ databaseUrl: dbh.url, clock: realClock, env: { RUNNER_LEASE_SECONDS: '30', RUNNER_SWEEP_SECONDS: '1' } });
    const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    const work = tempDir('pier-archive-cache-');
    const evil = path.join(work, 'evil.knwf');
    fs.writeFileSync(evil, makeZip('workflow/workflow.knime', '<tampered/>'));
    const evilDir = path.join(work, 'evil-archives');
    fs.mkdirSync(evilDir);
    // The archives of the executor are `<work-dir>/archives/<workflow>-<version>.knwf`; {workdir}
    // is `<work-dir>/runs/<run>-<attempt>`. Each mode tampers differently; every run prints what
    // it got, unpacked and as {archive}.
    const archives = '{workdir}/../../archives';
    const command = [
      `case {param.mode} in`,
      `overwrite) for a in ${archives}/*.knwf; do cat ${evil} > "$a"; done ;;`,
      `link) for a in ${archives}/*.knwf; do rm -f "$a"; ln -s ${evil} "$a"; done ;;`,
      `dir) for a in ${archives}/*.knwf; do cp ${evil} ${evilDir}/"$(basename "$a")"; done; mv ${archives} ${archives}.old; ln -s ${evilDir} ${archives} ;;`,
      `esac`,
      `printf 'unpacked=%s archive=%s\\n' "$(cat {workflow}/workflow/workflow.knime)" "$(unzip -p {archive} workflow/workflow.knime)"`,
    ].join('\n');
    const ex = startExecutor(base, 'cache', path.join(work, 'ex'), command, ['--capacity', '1']);
    try {
      const f = await protocolFixture(r);
      const logText = async (runId: string) =>
        (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?limit=1000`, headers: apiKey(API_KEY) })).json().items.map((l: { text: string }) => l.text).join('');
      const runOnce = async (mode: string) => {
        const run = await f.start({ parameters: { mode } });
        await until(async () => ['succeeded', 'failed', 'cancelled'].includes((await f.run(run.id)).status), () => ex.output.join(''));
        const done = await f.run(run.id);
        const log = await logText(run.id);
        assert.equal(done.status, 'succeeded', `${mode}: ${done.error} ${log} ${ex.output.join('')}`);
        return log;
      };
      for (const mode of ['overwrite', 'link', 'dir']) {
        // The tampering run itself got the genuine workflow; so does the next run of the version.
        assert.equal(await runOnce(mode), 'unpacked=<workflow/> archive=<workflow/>\n', `${mode}: the tampering run`);
        assert.equal(await runOnce('none'), 'unpacked=<workflow/> archive=<workflow/>\n', `${mode}: the run after it`);
      }
      assert.equal(ex.output.join('').match(/"event":"archive_changed"/g)?.length, 3, ex.output.join(''));
      ex.kill('SIGTERM');
      assert.equal(await exited(ex), 0);
    } finally {
      if (ex.exitCode === null) ex.kill('SIGKILL');
      await r.close();
      await dbh.drop();
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});
