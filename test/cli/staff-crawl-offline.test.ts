// `pier staff crawl` and `pier staff rollback` read the update site from the download host. With
// nothing listening there they refuse before anything is read or recorded, name the address and
// what to start (a stored fatal crawl would block `pier staff enable`). Requests that need no
// fetch (an unknown label, a product with nothing uploaded) keep their own answers.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/db.js';
import { freePort } from '../helpers/net.js';
import { needsTool } from '../helpers/tools.js';

const PIER = path.resolve('bin/pier.js');

test('staff crawl and rollback with no download host answering: a clear refusal, nothing recorded', needsTool('sshpass'), async () => {
  const [downloads, sftpPort] = [await freePort(), await freePort()];
  const data = tempDir('pier-crawl-offline-');
  const env = { ...process.env, PIER_DATA_DIR: data, PIER_DOWNLOAD_PORT: String(downloads), PIER_DOWNLOAD_URL: '', PIER_SFTP_PORT: String(sftpPort), PIER_LOG_LEVEL: 'warn' };
  const pier = (...args: string[]) => spawnSync(process.execPath, [PIER, 'staff', ...args], { env, encoding: 'utf8' });
  const reg = pier('register', 'offline', '--name', 'Offline', '--json');
  assert.equal(reg.status, 0, reg.stderr);
  const password = (JSON.parse(reg.stdout) as { sftp: { password: string } }).sftp.password;

  // Nothing uploaded: nothing to fetch, so the host is not asked.
  const none = pier('crawl', 'offline');
  assert.equal(none.status, 0, none.stderr);
  assert.match(none.stdout, /no uploaded update-site label to crawl/);

  // An update-site label uploaded over SFTP, with only the SFTP part running (no download host).
  const server = spawn(process.execPath, [PIER, 'serve', '--only', 'sftp'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let text = '';
      server.stderr.on('data', (d) => {
        text += d;
        if (/sftp listening/.test(text)) resolve();
      });
      server.once('exit', () => reject(new Error(`pier serve ended: ${text}`)));
    });
    const site = path.join(data, 'content.xml');
    fs.writeFileSync(site, '<repository/>');
    const put = spawnSync(
      'sshpass',
      ['-e', 'sftp', '-oBatchMode=no', '-oStrictHostKeyChecking=no', '-oUserKnownHostsFile=/dev/null', '-oLogLevel=ERROR', '-P', String(sftpPort), '-b', '-', 'offline@127.0.0.1'],
      { input: `mkdir update-site/1.0\nput ${site} update-site/1.0/content.xml\n`, env: { ...process.env, SSHPASS: password }, encoding: 'utf8' },
    );
    assert.equal(put.status, 0, put.stderr);
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }

  const crawl = pier('crawl', 'offline');
  assert.equal(crawl.status, 1, crawl.stderr);
  assert.match(crawl.stderr, new RegExp(`download host http://localhost:${downloads} does not answer \\(ECONNREFUSED\\)`));
  assert.match(crawl.stderr, /pier serve/);
  assert.match(crawl.stderr, /Nothing was crawled\./);

  const rollback = pier('rollback', 'offline', '1.0');
  assert.equal(rollback.status, 1, rollback.stderr);
  assert.match(rollback.stderr, /does not answer.*The label was not moved\./s);

  const shown = JSON.parse(pier('show', 'offline', '--json').stdout) as Record<string, unknown>;
  assert.deepEqual(shown.crawls, [], 'no crawl was recorded');

  // Answers that need no fetch are the crawler's own, whatever the download host does.
  const unknownLabel = pier('crawl', 'offline', '--label', '9.9');
  assert.equal(unknownLabel.status, 1);
  assert.match(unknownLabel.stderr, /has no uploaded update-site label "9.9"/);
  const unknown = pier('crawl', 'nobody');
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /no product "nobody"/);
});
