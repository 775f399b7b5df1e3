import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CredentialState, credentialWatch } from '../../../src/publishing/sftp/credential-watch.js';
import { CredentialRevokedError } from '../../../src/publishing/sftp/session.js';

function harness() {
  let state: CredentialState = 'current';
  let busy = false;
  let t = 0;
  const reads: CredentialState[] = [];
  const ended: string[] = [];
  const watch = credentialWatch({
    read: async () => {
      reads.push(state);
      return state;
    },
    busy: () => busy,
    end: (why) => ended.push(why),
    messages: { expired: 'expired', revoked: 'revoked' },
    freshMs: 1000,
    now: () => t,
  });
  const refusal = async (use: 'read' | 'change' | 'finish') => {
    try {
      await watch.check(use);
      return 'ok';
    } catch (e) {
      assert.ok(e instanceof CredentialRevokedError);
      return e.message;
    }
  };
  const tick = () => new Promise((r) => setImmediate(r));
  return {
    watch,
    refusal,
    reads,
    ended,
    tick,
    set: (s: CredentialState) => {
      state = s;
    },
    setBusy: (b: boolean) => {
      busy = b;
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

describe('SFTP credential watch', () => {
  test('read-only opens reuse a current answer for a second; changes and finishes read the database every time', async () => {
    const h = harness();
    for (let i = 0; i < 100; i++) assert.equal(await h.refusal('read'), 'ok');
    assert.equal(h.reads.length, 1, 'one read for 100 downloads within a second');
    h.advance(1000);
    assert.equal(await h.refusal('read'), 'ok');
    assert.equal(h.reads.length, 2);
    for (let i = 0; i < 5; i++) assert.equal(await h.refusal('change'), 'ok');
    assert.equal(await h.refusal('finish'), 'ok');
    assert.equal(h.reads.length, 8);
  });

  test('expired: new work refused, finishing allowed (and still checked for a revocation); ends when idle', async () => {
    const h = harness();
    h.setBusy(true);
    h.set('expired');
    assert.equal(await h.refusal('change'), 'expired');
    const readsAfter = h.reads.length;
    // Known expired: a read-only open or a change is refused without asking again.
    assert.equal(await h.refusal('read'), 'expired');
    assert.equal(await h.refusal('change'), 'expired');
    assert.equal(h.reads.length, readsAfter);
    assert.equal(await h.refusal('finish'), 'ok');
    assert.equal(h.reads.length, readsAfter + 1);
    // A clock that goes back (another instance) does not make it current again.
    h.set('current');
    assert.equal(await h.refusal('finish'), 'ok');
    assert.equal(await h.refusal('change'), 'expired');
    await h.watch.poll();
    await h.tick();
    assert.deepEqual(h.ended, [], 'busy: the transfer goes on');
    h.setBusy(false);
    h.watch.idle();
    await h.tick();
    assert.deepEqual(h.ended, ['expired']);
    h.watch.idle();
    await h.watch.poll();
    await h.tick();
    assert.deepEqual(h.ended, ['expired'], 'ended once');
  });

  test('revoked: everything refused, the session ends at once even while busy', async () => {
    const h = harness();
    h.setBusy(true);
    assert.equal(await h.refusal('read'), 'ok');
    h.set('revoked');
    assert.equal(await h.refusal('read'), 'ok', 'within the second a download still opens');
    assert.equal(await h.refusal('finish'), 'revoked');
    await h.tick();
    assert.deepEqual(h.ended, ['revoked']);
    h.set('current');
    assert.equal(await h.refusal('read'), 'revoked');
    assert.equal(await h.refusal('change'), 'revoked');
  });
});
