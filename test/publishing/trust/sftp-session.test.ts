import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type ssh2 from 'ssh2';
import { loadConfig } from '../../../src/infra/config.js';
import { type RunningSftp, startSftp } from '../../../src/publishing/sftp/index.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { ssh2Sftp } from '../sftp/stack.js';
import { githubClaims, type LocalIssuer, startIssuer } from './issuer.js';

const AUDIENCE = 'http://pier.test';
const PRODUCT = 'csv-nodes';

type Sftp = ssh2.SFTPWrapper;

/**
 * A request's outcome ('ok' or the server's message), or 'closed' once the session is gone
 * (ssh2's client fails a request pending at the close with "No response from server").
 */
function outcomeOn(sftp: Sftp) {
  const closed = new Promise<string>((r) => sftp.once('close', () => r('closed')));
  const answer = (e: Error | null | undefined) => (!e ? 'ok' : e.message === 'No response from server' ? 'closed' : e.message);
  return (start: (cb: (err: Error | null | undefined) => void) => void) => Promise.race([closed, new Promise<string>((resolve) => start((e) => resolve(answer(e))))]);
}

/*
 * The web instance (exchange, API, `pier staff` actions) and the SFTP instance each have their
 * own database handle, as two `pier serve` processes sharing one database do: what one changes,
 * the other learns from the database.
 */
for (const target of dialects()) {
  describe(`trusted publishing: an SFTP session lasts as long as its credential, on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let web: RunningPublishing;
    let sftp: RunningSftp;
    let dataDir: string;
    let skewMs = 0;
    const clock = () => new Date(Date.now() + skewMs);
    let storageDir: string;
    const stored = (rel: string) => path.join(storageDir, PRODUCT, rel);

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      dataDir = tempDir('pier-tp-session-');
      const env = {
        PIER_DATA_DIR: dataDir,
        PIER_DATABASE_URL: db.url,
        PIER_SFTP_PORT: '0',
        PIER_LOG_LEVEL: 'silent',
        PIER_BASE_URL: AUDIENCE,
        PIER_OIDC_GITHUB_ISSUER: issuer.url,
        PIER_OIDC_GITLAB_ISSUER: issuer.url,
      };
      storageDir = loadConfig(env).publishing.storageDir;
      web = await startPublishing(db.url, { trustClock: clock, failureLimits: { maxFailures: 1000 } }, env);
      sftp = await startSftp(loadConfig(env), { trustClock: clock, failureLimits: { maxFailures: 1000 }, tuning: { credentialCheckMs: 50 } });
      await web.service.products.register(PRODUCT, { name: 'CSV Nodes' });
      await web.service.trust.addBinding(PRODUCT, {
        provider: 'github',
        repository: 'octo-org/csv-nodes',
        repositoryId: '690002541',
        ownerId: '9919',
        workflow: '.github/workflows/release.yml',
      });
    });
    after(async () => {
      await sftp?.close();
      await web?.close();
      await issuer?.close();
      await db?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    async function credential(): Promise<string> {
      const res = await fetch(`${web.url}/api/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: await issuer.sign(githubClaims(AUDIENCE)) }),
      });
      assert.equal(res.status, 200);
      return ((await res.json()) as { token: string }).token;
    }

    const apiStatus = async (token: string) => {
      const res = await fetch(`${web.url}/api/products/${PRODUCT}`, { headers: { authorization: `Bearer ${token}` } });
      await res.body?.cancel();
      return res.status;
    };

    const openForWrite = (s: Sftp, file: string) => new Promise<Buffer>((resolve, reject) => s.open(file, 'w', (e, h) => (e ? reject(e) : resolve(h))));

    test('after 15 minutes: new operations are refused, the upload in progress commits, then the session ends', { timeout: 30_000 }, async () => {
      const token = await credential();
      const session = await ssh2Sftp(sftp.port, PRODUCT, token);
      const s = session.sftp;
      const outcome = outcomeOn(s);
      try {
        assert.equal(await outcome((cb) => s.mkdir('/update-site/5.4', cb)), 'ok');
        assert.equal(await outcome((cb) => s.writeFile('/update-site/5.4/kept.xml', '<kept/>', cb)), 'ok');
        const handle = await openForWrite(s, '/update-site/5.4/content.xml');
        assert.equal(await outcome((cb) => s.write(handle, Buffer.from('<repository>'), 0, 12, 0, cb)), 'ok');

        skewMs = 15 * 60_000 + 1000;
        // The API and new logins refuse the credential from now on.
        assert.equal(await apiStatus(token), 401);
        await assert.rejects(ssh2Sftp(sftp.port, PRODUCT, token));
        // Past periodic checks: the session is still there while its upload is in progress.
        await new Promise((r) => setTimeout(r, 200));

        const refused = [
          await outcome((cb) => s.writeFile('/update-site/5.4/late.xml', 'late', cb)),
          await outcome((cb) => s.mkdir('/update-site/5.5', cb)),
          await outcome((cb) => s.unlink('/update-site/5.4/kept.xml', cb)),
          await outcome((cb) => s.rename('/update-site/5.4/kept.xml', '/update-site/5.4/moved.xml', cb)),
          await outcome((cb) => s.readFile('/update-site/5.4/kept.xml', (e) => cb(e))),
          await outcome((cb) => s.readdir('/update-site/5.4', (e) => cb(e))),
        ];
        for (const r of refused) assert.match(r, /credential has expired/, JSON.stringify(refused));

        // The transfer in progress finishes: its writes and the CLOSE that commits it.
        assert.equal(await outcome((cb) => s.write(handle, Buffer.from('</repository>'), 0, 13, 12, cb)), 'ok');
        assert.equal(await outcome((cb) => s.close(handle, cb)), 'ok');
        // With nothing in progress any more, the server ends the session.
        assert.equal(await outcome((cb) => s.stat('/update-site', (e) => cb(e))), 'closed');
      } finally {
        skewMs = 0;
        session.end();
      }
      assert.equal(fs.readFileSync(stored('update-site/5.4/content.xml'), 'utf8'), '<repository></repository>');
      assert.equal(fs.readFileSync(stored('update-site/5.4/kept.xml'), 'utf8'), '<kept/>');
      assert.ok(!fs.existsSync(stored('update-site/5.4/late.xml')));
      assert.ok(!fs.existsSync(stored('update-site/5.4/moved.xml')));
      assert.ok(!fs.existsSync(stored('update-site/5.5')));
    });

    for (const rotation of ['rotateSftpPassword', 'rotateEditToken'] as const) {
      test(`${rotation === 'rotateSftpPassword' ? 'rotate-sftp-password' : 'rotate-token'} ends the session at once; its upload in progress does not land`, { timeout: 30_000 }, async () => {
        const token = await credential();
        const session = await ssh2Sftp(sftp.port, PRODUCT, token);
        const s = session.sftp;
        const outcome = outcomeOn(s);
        const file = `/assets/${rotation}.bin`;
        try {
          const handle = await openForWrite(s, file);
          assert.equal(await outcome((cb) => s.write(handle, Buffer.from('before'), 0, 6, 0, cb)), 'ok');
          // What `pier staff rotate-…` does, through the other instance's database handle.
          await web.service.products[rotation](PRODUCT);
          assert.equal(await apiStatus(token), 401);
          const late = await outcome((cb) => s.writeFile(`/assets/${rotation}-late.bin`, 'late', cb));
          assert.ok(late === 'closed' || /credential was revoked/.test(late), late);
          assert.notEqual(await outcome((cb) => s.close(handle, cb)), 'ok', 'the upload opened before does not land');
          assert.equal(await outcome((cb) => s.stat('/update-site', (e) => cb(e))), 'closed');
        } finally {
          session.end();
        }
        await assert.rejects(ssh2Sftp(sftp.port, PRODUCT, token));
        assert.ok(!fs.existsSync(stored(file.slice(1))));
        assert.ok(!fs.existsSync(stored(`assets/${rotation}-late.bin`)));
      });
    }

    test('the idle check ends a session whose binding staff removed, and one whose credential expired', { timeout: 30_000 }, async () => {
      const closed = (x: { sftp: Sftp }) => new Promise<void>((r) => x.sftp.once('close', () => r()));
      const revoked = await ssh2Sftp(sftp.port, PRODUCT, await credential());
      try {
        const binding = (await web.service.trust.listBindings(PRODUCT))[0]!;
        await web.service.trust.removeBinding(PRODUCT, binding.id);
        await closed(revoked);
      } finally {
        revoked.end();
        await web.service.trust.addBinding(PRODUCT, {
          provider: 'github',
          repository: 'octo-org/csv-nodes',
          repositoryId: '690002541',
          ownerId: '9919',
          workflow: '.github/workflows/release.yml',
        });
      }
      const expiring = await ssh2Sftp(sftp.port, PRODUCT, await credential());
      try {
        const ended = closed(expiring);
        skewMs = 15 * 60_000 + 1000;
        await ended;
      } finally {
        skewMs = 0;
        expiring.end();
      }
    });
  });
}
