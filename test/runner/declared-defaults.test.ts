import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { knwfWithConfigurationNodes } from './helpers.js';
import { api, listeningRunner, mcpClient, personalToken, setupAdmin, startExecutor } from './mcp-helpers.js';

/** What knwfWithConfigurationNodes declares as defaults. */
const DEFAULTS = { dry: true, mode: 'fast', ratio: 0.25, rows: 100, title: 'Monthly <b>report</b>' };
/** The batch executor's own flag, as docs/runner.md writes it. */
const COMMAND = "printf '%s' -workflow.variable=rows,{param.rows},int > {out}/args.txt";

for (const target of dialects()) {
  describe(`declared defaults are filled by the server for every way a run starts (${target.name})`, () => {
    test('API, MCP, schedules and re-runs run with the declared defaults; types are checked for schedules too; the executor gets rows,100,int', { timeout: 180_000 }, async () => {
      const db = await target.create();
      const { runner, base } = await listeningRunner({ databaseUrl: db.url });
      let executor: ChildProcess | null = null;
      try {
        const admin = await setupAdmin(base);
        const project = await api(base, admin, 'POST', '/api/projects', { name: 'Reports' }, 201);
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(knwfWithConfigurationNodes())]), 'Report.knwf');
        const upload = await fetch(`${base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: form });
        assert.equal(upload.status, 201, await upload.clone().text());
        const workflow = (await upload.json()) as { id: string };
        const start = (body: object, status = 201) => api(base, admin, 'POST', `/api/workflows/${workflow.id}/runs`, body, status);

        // The API: nothing given, or null, takes the default; values given stay.
        const bare = await start({});
        assert.deepEqual(bare.parameters, DEFAULTS);
        const some = await start({ parameters: { rows: null, mode: 'thorough', extra: 'x' } });
        assert.deepEqual(some.parameters, { ...DEFAULTS, mode: 'thorough', extra: 'x' });
        const bad = await start({ parameters: { rows: 'many' } }, 400);
        assert.deepEqual(bad.errors.map((e: { field: string }) => e.field), ['parameters/rows']);
        // As strict as the platform: `rows` is an xint (a Java int), `ratio` an xdouble read by Double.parseDouble.
        for (const [parameters, field] of [
          [{ rows: 99999999999 }, 'parameters/rows'],
          [{ rows: '2147483648' }, 'parameters/rows'],
          [{ ratio: '0x10' }, 'parameters/ratio'],
          [{ ratio: '0b1' }, 'parameters/ratio'],
          [{ ratio: '0o7' }, 'parameters/ratio'],
          [{ ratio: 'Infinity' }, 'parameters/ratio'],
        ] as const) {
          const refused = await start({ parameters }, 400);
          assert.deepEqual(refused.errors.map((e: { field: string }) => e.field), [field], JSON.stringify(parameters));
        }
        const outOfRange = await start({ parameters: { rows: 99999999999 } }, 400);
        assert.match(outOfRange.errors[0].message, /from -2147483648 to 2147483647/);
        assert.deepEqual((await start({ parameters: { rows: 2147483647, ratio: '1e-3' } })).parameters, { ...DEFAULTS, rows: 2147483647, ratio: '1e-3' });

        // MCP's start_run goes the same way.
        const client = await mcpClient(base, (await personalToken(base, admin, 'write')).token);
        const viaMcp = await client.callTool({ name: 'start_run', arguments: { workflowId: workflow.id, parameters: { ratio: 0.5 } } });
        assert.deepEqual((viaMcp.structuredContent as { run: { parameters: object } }).run.parameters, { ...DEFAULTS, ratio: 0.5 });
        for (const parameters of [{ rows: 99999999999 }, { ratio: '0x10' }]) {
          const refusedViaMcp = await client.callTool({ name: 'start_run', arguments: { workflowId: workflow.id, parameters } });
          assert.equal(refusedViaMcp.isError, true, JSON.stringify(parameters));
          assert.match(JSON.stringify(refusedViaMcp.content), /parameters\/(rows|ratio)/);
        }
        // An empty filter or cursor of MCP's list tools is refused too, not read as none.
        for (const [name, args] of [['list_runs', { since: '' }], ['list_runs', { cursor: '' }], ['list_schedules', { cursor: '' }]] as const) {
          const refusedList = await client.callTool({ name, arguments: args }).catch((e: Error) => ({ isError: true, content: e.message }));
          assert.equal(refusedList.isError, true, `${name} ${JSON.stringify(args)}`);
        }
        await client.close();

        // A re-run (of a finished run): what the run ran with, a null replacement taking the default again.
        await api(base, admin, 'POST', `/api/runs/${some.id}/cancel`, undefined, 200);
        const again = await api(base, admin, 'POST', `/api/runs/${some.id}/rerun`, { version: 'latest', parameters: { mode: null } }, 201);
        assert.deepEqual(again.parameters, { ...DEFAULTS, extra: 'x' });
        const rerunRefused = await api(base, admin, 'POST', `/api/runs/${some.id}/rerun`, { version: 'latest', parameters: { rows: '0x10' } }, 400);
        assert.equal(rerunRefused.errors[0].field, 'parameters/rows');

        // Schedules: values checked against the declared types when saved; defaults filled when they fire.
        const schedules = `/api/workflows/${workflow.id}/schedules`;
        const refused = await api(base, admin, 'POST', schedules, { cron: '* * * * *', parameters: { rows: 'many', mode: 'slow' } }, 400);
        assert.deepEqual(refused.errors.map((e: { field: string }) => e.field).sort(), ['parameters/mode', 'parameters/rows']);
        const schedule = await api(base, admin, 'POST', schedules, { cron: '* * * * *', parameters: { dry: false } }, 201);
        const patched = await api(base, admin, 'PATCH', `/api/schedules/${schedule.id}`, { parameters: { ratio: 'half' } }, 400);
        assert.equal(patched.errors[0].field, 'parameters/ratio');
        const hex = await api(base, admin, 'PATCH', `/api/schedules/${schedule.id}`, { parameters: { ratio: '0x10', rows: -2147483649 } }, 400);
        assert.deepEqual(hex.errors.map((e: { field: string }) => e.field).sort(), ['parameters/ratio', 'parameters/rows']);
        await api(base, admin, 'POST', schedules, { cron: '* * * * *', parameters: { rows: 99999999999 } }, 400);
        runner.clock.advance(120_000);
        const fired = await runner.service.scheduler.tick(runner.clock.now());
        assert.equal(fired.queued.length, 1);
        const scheduled = await api(base, admin, 'GET', `/api/runs/${fired.queued[0]}`, undefined, 200);
        assert.deepEqual(scheduled.parameters, { ...DEFAULTS, dry: false });

        // The executor's command gets the default in the documented flag, not `rows,,int`.
        executor = startExecutor(base, tempDir('pier-defaults-exec-'), COMMAND, 'defaults-executor');
        let run = bare;
        for (let i = 0; !['succeeded', 'failed', 'cancelled'].includes(run.status); i++) {
          assert.ok(i < 600, `the run did not end: ${run.status}`);
          await sleep(100);
          run = await api(base, admin, 'GET', `/api/runs/${bare.id}`, undefined, 200);
        }
        assert.equal(run.status, 'succeeded', run.error);
        const args = await fetch(`${base}/api/runs/${bare.id}/outputs/args.txt`, { headers: { authorization: `Bearer ${admin}` } });
        assert.equal(await args.text(), '-workflow.variable=rows,100,int');
      } finally {
        executor?.kill('SIGTERM');
        await runner.close();
        await db.drop();
      }
    });
  });
}
