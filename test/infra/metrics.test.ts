// Metrics (docs/operators.md#metrics): the real parts run in this process with metrics on
// (ephemeral ports), real clients drive traffic (HTTP with hostile paths, OpenSSH sftp through
// sshpass, downloads, a crawl, an executor's claim), and the /metrics page is read with an
// independent parser. Then: values follow the traffic, and no label value holds anything a client
// sent. `pier serve` itself: nothing listens for metrics by default, loopback when on, one page for
// the process tree when the download host has a process of its own, a bad PIER_METRICS_PORT stops
// start-up.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/infra/config.js';
import { startMetricsEndpoint } from '../../src/infra/metrics/endpoint.js';
import { disableMetrics, enableMetrics, metricsRegistry } from '../../src/infra/metrics/registry.js';
import { startServeMetrics } from '../../src/infra/metrics/serve.js';
import { type RunningDownloads, startDownloads } from '../../src/publishing/downloads/index.js';
import { createPublishingService, type PublishingService } from '../../src/publishing/service.js';
import { type RunningSftp, startSftp } from '../../src/publishing/sftp/index.js';
import { openPublishingDatabase } from '../../src/publishing/db.js';
import { releaseAsIs } from '../publishing/releases/release-as-is.js';
import { dialects, tempDir } from '../helpers/db.js';
import { needsTool } from '../helpers/tools.js';
import { openSshSftp } from '../publishing/sftp/stack.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from '../runner/executor-fixtures.js';
import { bearer, startRunner, type TestRunner } from '../runner/helpers.js';
import { has, labelValues, listeningPorts, observations, type Page, scrape, value } from './metrics-page.js';

const sftpTools = ['sshpass', 'sftp'].map(needsTool).find((t) => t.skip) ?? { skip: false };

/**
 * GET on a new connection: a connection the fast path once handed to node:http stays there, so a
 * request meant for the fast path must not reuse one (fetch keeps its connections).
 */
function getFresh(url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let last: T = await read();
  for (let i = 0; i < 100 && !ok(last); i++) {
    await new Promise((r) => setTimeout(r, 50));
    last = await read();
  }
  assert.ok(ok(last), `timed out waiting for ${what}`);
  return last;
}

test('settings: off by default, loopback by default, a bad value names its variable', () => {
  assert.deepEqual(loadConfig({}).metrics, { port: 0, host: '127.0.0.1' });
  // Opening the parts to a network does not open the metrics.
  assert.equal(loadConfig({ PIER_HOST: '0.0.0.0', PIER_METRICS_PORT: '9464' }).metrics.host, '127.0.0.1');
  assert.deepEqual(loadConfig({ PIER_METRICS_PORT: '9464', PIER_METRICS_HOST: '0.0.0.0' }).metrics, { port: 9464, host: '0.0.0.0' });
  assert.equal(loadConfig({ PIER_METRICS_PORT: '0' }).metrics.port, 0);
  const refused = (env: Record<string, string>, variable: string) =>
    assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.variable === variable && e.message.startsWith(`${variable}:`), JSON.stringify(env));
  refused({ PIER_METRICS_PORT: 'on' }, 'PIER_METRICS_PORT');
  refused({ PIER_METRICS_PORT: '-1' }, 'PIER_METRICS_PORT');
  refused({ PIER_METRICS_PORT: '70000' }, 'PIER_METRICS_PORT');
  refused({ PIER_METRICS_PORT: '8080' }, 'PIER_METRICS_PORT');
  refused({ PIER_METRICS_PORT: '9000', RUNNER_PORT: '9000' }, 'PIER_METRICS_PORT');
  refused({ PIER_METRICS_HOST: 'not a host' }, 'PIER_METRICS_HOST');
  refused({ PIER_METRICS_HOST: 'http://127.0.0.1' }, 'PIER_METRICS_HOST');
});

test('metrics off (the default): no registry, no listener, nothing counted', async () => {
  disableMetrics();
  const config = loadConfig({ PIER_DATA_DIR: tempDir() });
  assert.equal(await startServeMetrics(config, { partProcess: null, partsApart: false }), null);
  assert.equal(metricsRegistry(), null);
});

test('the listener answers /metrics only, with the text format content type, on loopback by default', async (t) => {
  disableMetrics();
  const registry = enableMetrics();
  const endpoint = await startMetricsEndpoint(registry, { host: loadConfig({}).metrics.host, port: 0 });
  t.after(async () => {
    await endpoint.close();
    disableMetrics();
  });
  const base = endpoint.url.replace(/\/metrics$/, '');
  assert.match(endpoint.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  const res = await fetch(`${base}/metrics?x=1`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  assert.match(await res.text(), /^process_cpu_seconds_total \d/m);
  assert.equal((await fetch(`${base}/`)).status, 404);
  assert.equal((await fetch(`${base}/metrics`, { method: 'POST' })).status, 405);
  // Not reachable at the machine's other addresses.
  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal);
  if (external) {
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(endpoint.port, external.address);
      s.once('connect', () => resolve(s.destroy() === undefined && false));
      s.once('error', () => resolve(true));
    });
    assert.ok(refused, `nothing listens on ${external.address}:${endpoint.port}`);
  }
});

for (const target of dialects()) {
  describe(`metrics of the parts (${target.name})`, () => {
    let publishingDb: { url: string; drop(): Promise<void> };
    let runnerDb: { url: string; drop(): Promise<void> };
    let dataDir: string;
    let metricsUrl: string;
    let closeEndpoint: () => Promise<void>;
    let downloads: RunningDownloads;
    let sftp: RunningSftp;
    let publishing: PublishingService;
    let web: string;
    let runner: TestRunner;
    let f: ProtocolFixture;
    /** Everything clients sent that names something: none may be a label value. */
    const sent: string[] = [];
    const productId = `metrics-${randomBytes(4).toString('hex')}`;
    let creds: { editToken: string; sftp: { username: string; password: string } };

    before(async () => {
      publishingDb = await target.create();
      runnerDb = await target.create();
      dataDir = tempDir('pier-metrics-');
      disableMetrics();
      const registry = enableMetrics();
      const endpoint = await startMetricsEndpoint(registry, { host: '127.0.0.1', port: 0 });
      metricsUrl = endpoint.url;
      closeEndpoint = endpoint.close;
      const env = { PIER_DATA_DIR: dataDir, PIER_DATABASE_URL: publishingDb.url, PIER_HTTP_PORT: '0', PIER_DOWNLOAD_PORT: '0', PIER_SFTP_PORT: '0', PIER_LOG_LEVEL: 'silent', PIER_CRAWL_SETTLE_SECONDS: '0' };
      downloads = await startDownloads(loadConfig(env));
      // The crawler reads what users get: the download host just started.
      const config = loadConfig({ ...env, PIER_DOWNLOAD_URL: downloads.url, PIER_BASE_URL: 'http://pier.test' });
      sftp = await startSftp(config);
      publishing = await createPublishingService(config, { pageFreshMs: 0 });
      web = await publishing.app.listen({ host: '127.0.0.1', port: 0 });
      runner = await startRunner({ databaseUrl: runnerDb.url });
      f = await protocolFixture(runner);
      const issued = await publishing.products.register(productId, { name: 'Metrics check' });
      creds = issued;
      sent.push(productId, issued.sftp.username, f.projectId, f.workflowId);
    });

    after(async () => {
      await runner?.close();
      await publishing?.close();
      await sftp?.close();
      await downloads?.close();
      await closeEndpoint?.();
      disableMetrics();
      await publishingDb?.drop();
      await runnerDb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    test('web and API requests by route template and status class; 404s as unmatched; latency observed', async () => {
      const before = await scrape(metricsUrl);
      assert.equal(before.contentType, 'text/plain; version=0.0.4; charset=utf-8');
      const patched = await fetch(`${web}/api/products/${productId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${creds.editToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ description: 'Counted' }),
      });
      assert.equal(patched.status, 200);
      const badToken = await fetch(`${web}/api/products/${productId}`, { method: 'PATCH', headers: { authorization: 'Bearer pier_et_not-a-token', 'content-type': 'application/json' }, body: '{}' });
      assert.equal(badToken.status, 401);
      const hostile = ['/product/%3Cscript%3Ealert(1)%3C%2Fscript%3E', `/${randomBytes(48).toString('hex')}/${randomBytes(24).toString('base64url')}`, '/no%zzdecode', `/product/${'x'.repeat(300)}`];
      for (const p of hostile) {
        const res = await fetch(`${web}${p}`);
        assert.ok(res.status >= 400 && res.status < 500, `${p}: ${res.status}`);
        await res.arrayBuffer();
      }
      sent.push('<script>', '%3Cscript', 'alert(1)', ...(hostile[1] as string).split('/').filter(Boolean), 'x'.repeat(300), 'zzdecode', 'not-a-token');
      const page = await scrape(metricsUrl);
      const web2xx = { app: 'web', method: 'PATCH', route: '/api/products/:id', status_class: '2xx' };
      assert.equal(value(page, 'pier_http_requests_total', web2xx) - (has(before, 'pier_http_requests_total', web2xx) ? value(before, 'pier_http_requests_total', web2xx) : 0), 1);
      assert.ok(value(page, 'pier_http_requests_total', { app: 'web', method: 'PATCH', route: '/api/products/:id', status_class: '4xx' }) >= 1);
      // The hostile product page matched its route; the random path and the malformed URL matched none.
      assert.ok(value(page, 'pier_http_requests_total', { app: 'web', method: 'GET', route: '/product/:id', status_class: '4xx' }) >= 1);
      assert.ok(value(page, 'pier_http_requests_total', { app: 'web', method: 'GET', route: 'unmatched', status_class: '4xx' }) >= 2);
      assert.ok(observations(page, 'pier_http_request_duration_seconds', { app: 'web', method: 'PATCH', route: '/api/products/:id' }) >= 2);
      const routes = new Set(labelValues(page).filter((l) => l.label === 'route').map((l) => l.value));
      for (const route of routes) assert.ok(route === 'unmatched' || /^\/[\w/:.*-]*$/.test(route), `route label ${JSON.stringify(route)} is a template`);
    });

    test('SFTP: a failed login, a session, an upload committed, bytes both ways; then a crawl and downloads', sftpTools, async () => {
      const wrong = await openSshSftp(sftp.port, { username: creds.sftp.username, password: 'not-the-password' }, ['ls']);
      assert.notEqual(wrong.code, 0);
      const local = path.join(dataDir, 'site.txt');
      const content = randomBytes(40_000);
      fs.writeFileSync(local, content);
      const back = path.join(dataDir, 'back.txt');
      const ok = await openSshSftp(sftp.port, creds.sftp, ['mkdir update-site/1.0', `put ${local} update-site/1.0/site.txt`, `get update-site/1.0/site.txt ${back}`]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.ok(fs.readFileSync(back).equals(content));
      sent.push('not-the-password', 'site.txt', 'update-site/1.0');
      const page = await until('the session to end', () => scrape(metricsUrl), (p) => value(p, 'pier_sftp_sessions') === 0);
      // sshpass answers the password prompt; ssh may send it again before sshpass gives up.
      const failed = value(page, 'pier_sftp_logins_total', { outcome: 'failed' });
      assert.ok(failed >= 1 && failed <= 3, `failed logins: ${failed}`);
      assert.equal(value(page, 'pier_sftp_logins_total', { outcome: 'ok' }), 1);
      assert.equal(value(page, 'pier_sftp_uploads_total', { outcome: 'committed' }), 1);
      assert.equal(value(page, 'pier_sftp_uploads_total', { outcome: 'refused' }), 0);
      assert.equal(value(page, 'pier_sftp_uploaded_bytes_total'), content.length);
      assert.equal(value(page, 'pier_sftp_downloaded_bytes_total'), content.length);

      // A text file is no update site: the crawl reads the label and ends fatal.
      const [crawled] = await publishing.crawler.crawl(productId, '1.0');
      assert.equal(crawled?.summary?.fatal, true);
      const afterCrawl = await scrape(metricsUrl);
      assert.equal(value(afterCrawl, 'pier_crawls_total', { outcome: 'fatal' }), 1);
      assert.equal(value(afterCrawl, 'pier_crawls_total', { outcome: 'ok' }), 0);
      assert.equal(observations(afterCrawl, 'pier_crawl_duration_seconds'), 1);

      // Never released by a crawl (nor served before a release): released as is, so the download host serves it.
      const database = await openPublishingDatabase(publishingDb.url);
      try {
        await releaseAsIs(database.db, path.join(dataDir, 'storage'), productId, '1.0');
      } finally {
        await database.close();
      }
      const url = `${downloads.url}/${productId}/1.0/site.txt`;
      const hostDownloads = (p: Page, via: string, statusClass = '2xx') => value(p, 'pier_host_requests_total', { host: 'downloads', via, status_class: statusClass });
      const first = await fetch(url);
      assert.ok(Buffer.from(await first.arrayBuffer()).equals(content));
      // The crawl read it through the download host before: count from here.
      const mid = await scrape(metricsUrl);
      const second = await getFresh(url);
      assert.ok(second.body.equals(content));
      const missing = await fetch(`${downloads.url}/%3Cscript%3E/${productId}-nope/x.jar`);
      assert.equal(missing.status, 404);
      await missing.arrayBuffer();
      const end = await scrape(metricsUrl);
      assert.ok(hostDownloads(end, 'node_http') + hostDownloads(end, 'fast_path') >= 2, 'both downloads counted');
      assert.equal(hostDownloads(end, 'fast_path') - hostDownloads(mid, 'fast_path'), 1, 'the second download came from the fast path');
      assert.equal(hostDownloads(end, 'node_http', '4xx') - hostDownloads(mid, 'node_http', '4xx'), 1);
      const bytes = (p: Page, via: string) => value(p, 'pier_host_sent_bytes_total', { host: 'downloads', via });
      const fastBytes = bytes(end, 'fast_path') - bytes(mid, 'fast_path');
      // The file and its head (status line and headers, a few hundred bytes).
      assert.ok(fastBytes > content.length && fastBytes < content.length + 2048, `fast path bytes ${fastBytes}`);
      assert.ok(bytes(end, 'node_http') > content.length, 'the first answer went through node:http');
    });

    test('pages: a cached product page is answered and counted on the fast path', async () => {
      await publishing.crawler.enable(productId, true);
      const first = await fetch(`${web}/product/${productId}`);
      assert.equal(first.status, 200);
      const html = await first.text();
      const mid = await scrape(metricsUrl);
      const again = await getFresh(`${web}/product/${productId}`);
      assert.equal(again.body.toString(), html);
      const end = await scrape(metricsUrl);
      const fast = (p: Page) => value(p, 'pier_host_requests_total', { host: 'pages', via: 'fast_path', status_class: '2xx' });
      const fastBytes = (p: Page) => value(p, 'pier_host_sent_bytes_total', { host: 'pages', via: 'fast_path' });
      assert.equal(fast(end) - fast(mid), 1);
      assert.ok(fastBytes(end) - fastBytes(mid) > Buffer.byteLength(html));
      assert.ok(value(mid, 'pier_http_requests_total', { app: 'web', route: '/product/:id', status_class: '2xx' }) >= 1, 'the first answer was the app’s');
    });

    test('runner: queue depth by executor label, executors online, a claim timed, runs finished by state', async () => {
      const gpu = await f.register({ labels: ['metrics-gpu'] });
      const typed = `user-typed-${randomBytes(3).toString('hex')}`;
      const plain = await f.start();
      const needsGpu = await f.start({ requiredLabels: ['metrics-gpu'] });
      const needsUnknown = await f.start({ requiredLabels: [typed] });
      sent.push(typed, gpu, plain.id, needsGpu.id, needsUnknown.id);
      const queued = await scrape(metricsUrl);
      assert.equal(value(queued, 'pier_runner_queue_depth'), 3);
      assert.equal(value(queued, 'pier_runner_queue_depth_by_label', { executor_label: 'metrics-gpu' }), 1);
      // A label only a run asked for (user input) never becomes a label value.
      assert.ok(!labelValues(queued).some((l) => l.value === typed));
      assert.deepEqual(
        ['online', 'draining', 'offline'].map((status) => value(queued, 'pier_runner_executors', { status })),
        [1, 0, 0],
      );

      const claimed = (await f.claim(gpu)).claim;
      assert.equal(claimed?.run.id, plain.id, 'oldest first');
      assert.equal((await f.complete(plain.id, leaseOf(claimed!), 'succeeded')).statusCode, 200);
      const cancel = await f.inject({ method: 'POST', url: `/api/runs/${needsUnknown.id}/cancel`, headers: bearer(f.session) });
      assert.equal(cancel.json().status, 'cancelled');
      const page = await scrape(metricsUrl);
      assert.equal(observations(page, 'pier_runner_claim_duration_seconds', { outcome: 'run' }), 1);
      assert.equal(value(page, 'pier_runner_runs_finished_total', { state: 'succeeded' }), 1);
      assert.equal(value(page, 'pier_runner_runs_finished_total', { state: 'cancelled' }), 1);
      assert.equal(value(page, 'pier_runner_runs_finished_total', { state: 'failed' }), 0);
      assert.equal(value(page, 'pier_runner_queue_depth'), 1);
      assert.equal(value(page, 'pier_runner_queue_depth_by_label', { executor_label: 'metrics-gpu' }), 1);
      assert.equal(value(page, 'pier_http_requests_total', { app: 'runner', method: 'POST', route: '/api/executors/:id/claim', status_class: '2xx' }), 1);
      for (const name of ['pier_runner_schedule_fires_total', 'pier_runner_retention_deleted_runs_total', 'pier_runner_oauth_grants_total', 'pier_runner_oauth_refresh_total']) {
        assert.ok(page.metrics[name], `${name} is on the page`);
      }
      assert.ok(page.metrics.process_cpu_seconds_total && page.metrics.nodejs_heap_size_used_bytes, 'process metrics');
    });

    test('no label value holds anything a client sent', async () => {
      const page = await scrape(metricsUrl);
      assert.ok(sent.length > 10);
      for (const l of labelValues(page)) {
        for (const s of sent) assert.ok(!l.value.includes(s), `${l.name}{${l.label}="${l.value}"} holds "${s}"`);
      }
      // And every label value is short and from a small set per label.
      const perLabel = new Map<string, Set<string>>();
      for (const l of labelValues(page)) perLabel.set(`${l.name}/${l.label}`, (perLabel.get(`${l.name}/${l.label}`) ?? new Set()).add(l.value));
      for (const [key, values] of perLabel) assert.ok(values.size <= 64, `${key}: ${values.size} values`);
    });
  });
}

/** A `pier serve` process, the pids of its process tree, and the download host's own process. */
async function serve(
  env: Record<string, string>,
  only: string,
): Promise<{ child: ChildProcess; out: () => string; pids: () => number[]; downloadsPid: () => number | undefined; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', only], { env: { ...process.env, PIER_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (c) => (out += c));
  child.stderr?.on('data', (c) => (out += c));
  const lines = only.split(',').map((part) => `pier: ${part} listening on `);
  for (let i = 0; i < 600 && !lines.every((l) => out.includes(l)); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const childrenOf = (pid: number): number[] => {
    const direct = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
    return direct.flatMap((c) => [c, ...childrenOf(c)]);
  };
  const pids = () => [child.pid as number, ...childrenOf(child.pid as number)];
  const cmdline = (pid: number) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      return [];
    }
  };
  return {
    child,
    out: () => out,
    pids,
    downloadsPid: () => pids().find((pid) => pid !== child.pid && cmdline(pid).join(' ').includes('serve --only downloads')),
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

describe('pier serve', () => {
  test('metrics off by default: its processes listen on the parts’ ports and nothing else', async () => {
    const [httpPort, downloadPort] = [await freePort(), await freePort()];
    const s = await serve({ PIER_DATA_DIR: tempDir(), PIER_HTTP_PORT: String(httpPort), PIER_DOWNLOAD_PORT: String(downloadPort) }, 'web,downloads');
    try {
      assert.match(s.out(), /downloads listening on .*own process/, s.out());
      assert.ok(s.downloadsPid(), 'the download host runs in a process of its own');
      const ports = s.pids().flatMap((pid) => listeningPorts(pid).map((l) => l.port));
      assert.deepEqual(ports.sort(), [httpPort, downloadPort].sort());
      assert.doesNotMatch(s.out(), /metrics/);
    } finally {
      await s.stop();
    }
  });

  test('metrics on: one loopback page for the process tree, the download host’s process included', async () => {
    const [httpPort, downloadPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    const dataDir = tempDir();
    // The label's current release (the download host serves a label from it).
    fs.mkdirSync(path.join(dataDir, 'storage', 'tree-check', 'releases', '2.0', '1'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'storage', 'tree-check', 'releases', '2.0', '1', 'content.jar'), 'jar bytes');
    fs.symlinkSync('1', path.join(dataDir, 'storage', 'tree-check', 'releases', '2.0', 'current'));
    const s = await serve(
      // The parts on every address: the metrics stay on loopback.
      { PIER_DATA_DIR: dataDir, PIER_HOST: '0.0.0.0', PIER_HTTP_PORT: String(httpPort), PIER_DOWNLOAD_PORT: String(downloadPort), PIER_METRICS_PORT: String(metricsPort) },
      'web,downloads',
    );
    try {
      assert.match(s.out(), new RegExp(`metrics listening on http://127\\.0\\.0\\.1:${metricsPort}/metrics`), s.out());
      const parent = s.child.pid as number;
      const child = s.downloadsPid() as number;
      assert.deepEqual(listeningPorts(child).map((l) => l.port), [downloadPort], 'the download host’s process listens on its own port only');
      const metricsListener = listeningPorts(parent).find((l) => l.port === metricsPort);
      assert.equal(metricsListener?.address, '127.0.0.1');
      assert.equal(listeningPorts(parent).find((l) => l.port === httpPort)?.address, '0.0.0.0');
      for (let i = 0; i < 2; i++) assert.equal((await fetch(`http://127.0.0.1:${downloadPort}/tree-check/2.0/content.jar`).then((r) => r.text())), 'jar bytes');
      assert.equal((await fetch(`http://127.0.0.1:${httpPort}/healthz`)).status, 200);
      const page = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(value(page, 'pier_part_process_up', { part: 'downloads' }), 1);
      const downloads = ['fast_path', 'node_http'].map((via) => value(page, 'pier_host_requests_total', { host: 'downloads', via, status_class: '2xx', process: 'downloads' }));
      assert.equal(downloads[0]! + downloads[1]!, 2);
      assert.equal(value(page, 'pier_http_requests_total', { app: 'web', route: '/healthz', status_class: '2xx', process: 'serve' }), 1);
      // Both processes' own metrics, apart.
      assert.ok(has(page, 'process_cpu_seconds_total', { process: 'serve' }) && has(page, 'process_cpu_seconds_total', { process: 'downloads' }));
      assert.ok(!has(page, 'pier_http_requests_total', { process: 'downloads' }));
    } finally {
      await s.stop();
    }
  });

  test('a bad PIER_METRICS_PORT stops start-up, naming the variable', async () => {
    const r = spawnSync(process.execPath, ['bin/pier.js', 'serve', '--only', 'web'], {
      env: { ...process.env, PIER_DATA_DIR: tempDir(), PIER_HTTP_PORT: '0', PIER_METRICS_PORT: 'ninety' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 78, r.stderr);
    assert.match(r.stderr, /PIER_METRICS_PORT/);
    // A port already taken stops it too, naming the variable.
    const taken = net.createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => taken.once('listening', resolve));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const busy = spawnSync(process.execPath, ['bin/pier.js', 'serve', '--only', 'web'], {
        env: { ...process.env, PIER_DATA_DIR: tempDir(), PIER_HTTP_PORT: '0', PIER_METRICS_PORT: String(port) },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.notEqual(busy.status, 0);
      assert.match(busy.stderr, new RegExp(`PIER_METRICS_PORT: cannot listen on 127\\.0\\.0\\.1:${port}`));
    } finally {
      taken.close();
    }
  });
});
