import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import ssh2 from 'ssh2';
import { dialects } from '../../helpers/db.js';
import { addressGroup } from '../../../src/publishing/sftp/server.js';
import { type Stack, ssh2Sftp, startStack } from './stack.js';

const [sqlite] = dialects();

async function withStack<T>(options: Parameters<typeof startStack>[1], body: (stack: Stack) => Promise<T>): Promise<T> {
  const db = await sqlite!.create();
  const stack = await startStack(db.url, options);
  try {
    return await body(stack);
  } finally {
    await stack.close();
    await db.drop();
  }
}

/** A TCP connection to the server from `localAddress` (any 127.0.0.0/8 address is this machine). */
function rawSocket(port: number, localAddress = '127.0.0.1'): Promise<net.Socket & { gone: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    const gone = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
    // Read (and drop) what the server sends, or its close would wait behind the unread greeting.
    socket.resume();
    socket.once('connect', () => resolve(Object.assign(socket, { gone })));
    socket.once('close', () => reject(new Error('closed before connecting')));
  });
}

/**
 * Logs in, retrying while the server has not yet seen the close of connections this test just
 * dropped (the client's 'close' comes before the server's).
 */
async function loginOnceReleased(port: number, username: string, password: string, localAddress = '127.0.0.1'): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await new Promise<void>((resolve, reject) => {
        const client = new ssh2.Client();
        client.on('ready', () => {
          client.end();
          resolve();
        });
        client.on('error', reject);
        client.on('close', () => reject(new Error('connection closed by the server')));
        client.connect({ host: '127.0.0.1', port, localAddress, username, password, tryKeyboard: false });
      });
      return;
    } catch (e) {
      if (attempt >= 50) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Logs in with the right password and drops the connection while the server checks it (scrypt). */
function dropDuringPasswordCheck(port: number, username: string, password: string): Promise<void> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const client = new ssh2.Client();
    client.on('error', () => {});
    sock.once('close', () => resolve());
    client.connect({
      sock,
      username,
      authHandler: (_methods, _partial, next) => {
        next({ type: 'password', username, password });
        // The request is on its way; the connection ends before the answer can come.
        setImmediate(() => sock.end());
      },
    } as ssh2.ConnectConfig);
  });
}

describe('SFTP connection lifecycle', () => {
  test('connections dropped during the password check do not use up the product session cap', async () => {
    await withStack({ env: { PIER_SFTP_MAX_SESSIONS: '2' } }, async (stack) => {
      const creds = (await stack.register('drop-ext')).sftp;
      for (let i = 0; i < 12; i++) await dropDuringPasswordCheck(stack.sftp.port, creds.username, creds.password);
      // Two sessions (the cap) still open: nothing was left counted by the dropped ones.
      const a = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      const b = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      a.end();
      b.end();
    });
  });

  test('an unauthenticated connection is closed after the login timeout, even one that never says a word', { timeout: 30_000 }, async () => {
    await withStack({ env: { PIER_SFTP_LOGIN_TIMEOUT: '1' } }, async (stack) => {
      const silent = await rawSocket(stack.sftp.port);
      const greeted = await rawSocket(stack.sftp.port);
      greeted.write('SSH-2.0-test\r\n');
      await Promise.all([silent.gone, greeted.gone]);
    });
  });

  test('unauthenticated connections are capped per address; other addresses and logins later still get in', { timeout: 60_000 }, async () => {
    await withStack({ env: { PIER_SFTP_LOGIN_TIMEOUT: '600' }, sftp: { maxPendingPerAddress: 3 } }, async (stack) => {
      const creds = (await stack.register('cap-ext')).sftp;
      const held = [];
      for (let i = 0; i < 3; i++) held.push(await rawSocket(stack.sftp.port, '127.0.0.2'));
      const over = await Promise.all([1, 2, 3].map(() => rawSocket(stack.sftp.port, '127.0.0.2')));
      // The server closes the connections over the cap as they arrive.
      await Promise.all(over.map((s) => s.gone));
      // Another address logs in as usual.
      (await ssh2Sftp(stack.sftp.port, creds.username, creds.password)).end();
      for (const s of held) s.destroy();
      await Promise.all(held.map((s) => s.gone));
      // The address's places are free again once its connections are gone.
      await loginOnceReleased(stack.sftp.port, creds.username, creds.password, '127.0.0.2');
    });
  });

  test('unauthenticated connections are capped overall; a newcomer displaces the oldest of the address holding the most', { timeout: 60_000 }, async () => {
    await withStack({ env: { PIER_SFTP_LOGIN_TIMEOUT: '600' }, sftp: { maxPendingLogins: 4, maxPendingPerAddress: 2 } }, async (stack) => {
      const creds = (await stack.register('all-ext')).sftp;
      // Two addresses take every place with connections that never log in.
      const a1 = await rawSocket(stack.sftp.port, '127.0.0.2');
      const b1 = await rawSocket(stack.sftp.port, '127.0.0.3');
      const a2 = await rawSocket(stack.sftp.port, '127.0.0.2');
      const b2 = await rawSocket(stack.sftp.port, '127.0.0.3');
      // A client of a third address still logs in: the oldest silent connection (a1) made room.
      (await ssh2Sftp(stack.sftp.port, creds.username, creds.password)).end();
      await a1.gone;
      // Places are free again (the login left its own): these fill them without displacing.
      const c1 = await rawSocket(stack.sftp.port, '127.0.0.4');
      // Full: a second one of 127.0.0.4 displaces the oldest of 127.0.0.3 (it holds the most).
      const c2 = await rawSocket(stack.sftp.port, '127.0.0.4');
      await b1.gone;
      // A new address displaces the oldest of 127.0.0.4, which holds the most now.
      const d1 = await rawSocket(stack.sftp.port, '127.0.0.5');
      await c1.gone;
      // An address holding as many places as any other is refused rather than displacing.
      const a3 = await rawSocket(stack.sftp.port, '127.0.0.2');
      await a3.gone;
      const kept = [a2, b2, c2, d1];
      for (const s of kept) assert.equal(s.destroyed, false);
      for (const s of kept) s.destroy();
      await Promise.all(kept.map((s) => s.gone));
    });
  });

  test('IPv6 addresses count by /64 for the pre-login caps and bans', () => {
    assert.equal(addressGroup('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressGroup('2001:db8:1:2::ffff'), '2001:db8:1:2::/64');
    assert.equal(addressGroup('2001:0db8:0001:0002:1:2:3:4'), '2001:db8:1:2::/64');
    assert.equal(addressGroup('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressGroup('::1'), '0:0:0:0::/64');
    assert.equal(addressGroup('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(addressGroup('192.0.2.7'), '192.0.2.7');
  });

  test('a logged-in session with no requests is closed after the idle timeout', { timeout: 30_000 }, async () => {
    await withStack({ env: { PIER_SFTP_IDLE_TIMEOUT: '1' } }, async (stack) => {
      const creds = (await stack.register('idle-ext')).sftp;
      const client = new ssh2.Client();
      const closed = new Promise<void>((r) => client.once('close', () => r()));
      await new Promise<void>((resolve, reject) => {
        client.on('ready', () => resolve());
        client.on('error', reject);
        client.connect({ host: '127.0.0.1', port: stack.sftp.port, username: creds.username, password: creds.password, tryKeyboard: false });
      });
      await new Promise<void>((resolve, reject) => client.sftp((e) => (e ? reject(e) : resolve())));
      await closed;
    });
  });
});
