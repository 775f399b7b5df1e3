import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { type RunningSftp, startSftp } from '../../../src/publishing/sftp/index.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp } from '../sftp/stack.js';
import { githubClaims, type LocalIssuer, startIssuer } from './issuer.js';

const AUDIENCE = 'http://pier.test';

for (const target of dialects()) {
  describe(`trusted publishing: the credential as SFTP password (OpenSSH sftp) on ${target.name}`, needsTool('sshpass'), () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let web: RunningPublishing;
    let sftp: RunningSftp;
    let dataDir: string;
    let skewMs = 0;
    const clock = () => new Date(Date.now() + skewMs);

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      dataDir = tempDir('pier-tp-sftp-');
      const env = {
        PIER_DATA_DIR: dataDir,
        PIER_DATABASE_URL: db.url,
        PIER_SFTP_PORT: '0',
        PIER_LOG_LEVEL: 'silent',
        PIER_BASE_URL: AUDIENCE,
        PIER_OIDC_GITHUB_ISSUER: issuer.url,
        PIER_OIDC_GITLAB_ISSUER: issuer.url,
      };
      web = await startPublishing(db.url, { trustClock: clock }, env);
      sftp = await startSftp(loadConfig(env), { trustClock: clock, failureLimits: { maxFailures: 1000 }, tuning: { credentialCheckMs: 50 } });
      await web.service.products.register('csv-nodes', { name: 'CSV Nodes' });
      await web.service.products.register('other-nodes', { name: 'Other' });
      await web.service.trust.addBinding('csv-nodes', {
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

    test('logs in as the product with the credential and uploads; recorded in the history', async () => {
      const token = await credential();
      const local = tempDir('pier-tp-up-');
      fs.writeFileSync(path.join(local, 'content.xml'), '<repository/>');
      const r = await openSshSftp(sftp.port, { username: 'csv-nodes', password: token }, [
        `lcd ${local}`,
        'mkdir update-site/5.4',
        'put content.xml update-site/5.4/content.xml',
        'ls update-site/5.4',
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /content\.xml/);
      const back = await openSshSftp(sftp.port, { username: 'csv-nodes', password: token }, [`lcd ${local}`, 'get update-site/5.4/content.xml back.xml']);
      assert.equal(back.code, 0, back.stderr);
      assert.equal(fs.readFileSync(path.join(local, 'back.xml'), 'utf8'), '<repository/>');
      const [h] = await web.service.trust.history('csv-nodes', 1);
      assert.deepEqual([h!.action, h!.repository, h!.workflow, h!.runId], ['sftp', 'octo-org/csv-nodes', '.github/workflows/release.yml', '12233154281']);
      // Not the password of another product's user.
      const other = await openSshSftp(sftp.port, { username: 'other-nodes', password: token }, ['ls']);
      assert.notEqual(other.code, 0);
      fs.rmSync(local, { recursive: true, force: true });
    });

    test('after 15 minutes the credential no longer logs in', async () => {
      const token = await credential();
      assert.equal((await openSshSftp(sftp.port, { username: 'csv-nodes', password: token }, ['ls'])).code, 0);
      skewMs = 15 * 60_000 + 1000;
      try {
        const late = await openSshSftp(sftp.port, { username: 'csv-nodes', password: token }, ['ls']);
        assert.notEqual(late.code, 0);
        assert.match(late.stderr, /Permission denied|Authentication failed/i);
      } finally {
        skewMs = 0;
      }
    });
  });
}
