import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { BackgroundLoop } from '../../src/infra/background-loop.js';
import { bearer, makeZip, multipart, startRunner, TestClock, SETUP_TOKEN } from './helpers.js';

describe('background loops', () => {
  test('stop() signals the pass in progress, waits for it, and no pass starts after', async () => {
    let passes = 0;
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inPass = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let seenSignal: AbortSignal | undefined;
    const loop = new BackgroundLoop({
      intervalMs: 1,
      firstDelayMs: 0,
      run: async (signal) => {
        passes++;
        seenSignal = signal;
        entered();
        await blocked;
      },
      onError: (e) => assert.fail(String(e)),
    });
    loop.start();
    await inPass;
    let stopped = false;
    const stopping = loop.stop().then(() => {
      stopped = true;
    });
    await sleep(20);
    assert.equal(stopped, false, 'stop waits for the pass in progress');
    assert.equal(seenSignal?.aborted, true, 'the pass is told to stop');
    release();
    await stopping;
    const after = passes;
    await sleep(20);
    assert.equal(passes, after, 'no pass after stop');
    assert.equal(passes, 1);
  });

  test('a failing pass is reported and the loop goes on', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    let twice!: () => void;
    const done = new Promise<void>((resolve) => {
      twice = resolve;
    });
    const loop = new BackgroundLoop({
      intervalMs: 1,
      firstDelayMs: 0,
      run: async () => {
        if (++passes === 2) twice();
        if (passes === 1) throw new Error('boom');
      },
      onError: (e) => errors.push(e),
    });
    // The loop's timers never keep a process alive on their own (a server's sockets do).
    const keepAlive = setInterval(() => undefined, 1000);
    loop.start();
    await done;
    await loop.stop();
    clearInterval(keepAlive);
    assert.equal((errors[0] as Error).message, 'boom');
  });

  test('pier serve: the scheduler loop fires a due schedule by itself, and close() stops it', async () => {
    const clock = new TestClock(Date.parse('2030-01-01T00:00:00Z'));
    const r = await startRunner({ clock });
    try {
      const app = r.service.app;
      const session = (await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } })).json()
        .session.token;
      const projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const wf = (await app.inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload })).json().id;
      const s = (await app.inject({ method: 'POST', url: `/api/workflows/${wf}/schedules`, headers: bearer(session), payload: { cron: '* * * * *' } })).json();
      clock.advance(60_000);
      // Waits for the loop (it ticks about every second); the suite's own timeout bounds it.
      let runs: { scheduleId: string }[] = [];
      while (runs.length === 0) {
        await sleep(100);
        runs = (await app.inject({ method: 'GET', url: `/api/runs?workflow=${wf}`, headers: bearer(session) })).json().items;
      }
      assert.deepEqual(runs.map((x) => x.scheduleId), [s.id]);
    } finally {
      await r.close();
    }
  });
});
