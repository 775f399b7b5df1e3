// `npm run bench pages`: requests/s of a cached product page and of the catalog (1,000 live
// products) served by `pier serve --only web` against nginx (Debian package) serving the same bytes
// as static files (target >= 0.7 by wrk and by autocannon; docs/operators.md#performance). Same
// load tool and settings, same run; server on one CPU, load generator on the other. Then: the first
// render after a change (targets: product page <= 20 ms, catalog <= 50 ms), and a load during which
// a second `pier serve` process PATCHes the product every 100 ms, counting answers older than the
// last PATCH that had finished more than the freshness bound (FRESH_MS) before the request was sent
// (target 0).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { DEFAULT_LIMITS, loadConfig } from '../src/infra/config.js';
import { localStorage } from '../src/infra/storage-local.js';
import { openPublishingDatabase } from '../src/publishing/db.js';
import { filesRepository } from '../src/publishing/files/repository.js';
import { filesService } from '../src/publishing/files/service.js';
import { FRESH_MS } from '../src/publishing/downloads/file-cache.js';
import { productsRepository } from '../src/publishing/products/repository.js';
import { CONNECTIONS, DURATION_S, freePort, load, pierCli, pinToCpu, startPier, tempDir } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CATALOG_PRODUCTS = 1000;
const FIRST_RENDERS = 15;
const PATCH_EVERY_MS = 100;

const FIELDS = {
  name: 'Text Tools',
  description: 'Tokenize, stem and tag text right inside your workflows',
  text: `# Overview\n\nWorks with release {{platformRelease}}.\n\n${Array.from({ length: 12 }, (_, i) => `## Section ${i}\n\nSome *text* with a [link](https://docs.example/${i}) and \`code\`.\n\n- one\n- two\n`).join('\n')}`,
  changelog: `# Changelog\n\n${Array.from({ length: 20 }, (_, i) => `## [1.${20 - i}.0] - 2024-01-${String(i + 1).padStart(2, '0')}\n### Added\n- Node ${i}\n### Fixed\n- Bug ${i}\n`).join('\n')}`,
  faq: Array.from({ length: 8 }, (_, i) => `## Question ${i}?\n\nAnswer ${i}.`).join('\n\n'),
  license: 'MIT License',
  contact: { name: 'Ada Vendor', email: 'ada@vendor.example' },
  style: { color1: '#123456', color2: '#abcdef', badgeColor: '#ff8800' },
  instructions: 'Restart after installing.',
  icon: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4"/></svg>',
};

interface Rate {
  rps: number;
  p99: number;
  tool: string;
}

const WRK = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).stdout.trim();

/**
 * One load run with the given tool; both sides always get the same tool and settings.
 * autocannon (the load tool of the other benches) runs in this Node process and saturates
 * before nginx does, so wrk (C) is also used when installed: it shows nginx's real capacity.
 */
async function measure(url: string, tool: 'wrk' | 'autocannon'): Promise<Rate> {
  const wrk = tool === 'wrk' ? WRK : '';
  if (!wrk) {
    const r = await load({ url });
    if (r.errors) throw new Error(`${r.errors} errors from ${url}`);
    return { rps: r.rps, p99: r.p99, tool: 'autocannon' };
  }
  // Pinned to CPU 0; the servers run on CPU 1.
  const out = spawnSync('taskset', ['-c', '0', wrk, '-t1', `-c${CONNECTIONS}`, `-d${DURATION_S}s`, '--latency', url], { encoding: 'utf8' });
  const text = out.stdout ?? '';
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]);
  const p99raw = /99%\s+([\d.]+)(us|ms|s)/.exec(text);
  if (!rps || /Non-2xx|Socket errors/.test(text)) throw new Error(`wrk against ${url} failed:\n${text}${out.stderr}`);
  const p99 = p99raw ? Number(p99raw[1]) * ({ us: 0.001, ms: 1, s: 1000 }[p99raw[2] as 'ms'] ?? 1) : Number.NaN;
  return { rps, p99, tool: 'wrk -t1' };
}

async function startNginx(html: Buffer, catalog: Buffer): Promise<{ url: string; catalogUrl: string; stop(): Promise<void> }> {
  const dir = tempDir('pier-bench-nginx-');
  const www = path.join(dir, 'www', 'product');
  fs.mkdirSync(www, { recursive: true });
  fs.writeFileSync(path.join(www, 'text-tools'), html);
  fs.writeFileSync(path.join(dir, 'www', 'index.html'), catalog);
  // nginx's workers may run as nobody: let them read the throwaway tree.
  spawnSync('chmod', ['-R', 'a+rX', dir]);
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${dir}/www;
    default_type text/html;
  }
}
`,
  );
  const child: ChildProcess = spawn('nginx', ['-c', conf, '-p', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}/product/text-tools`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) break;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // worker_processes 1: the master forks one worker; pin the whole group to CPU 1.
  spawnSync('sh', ['-c', `for p in $(pgrep -g ${child.pid} || pgrep -P ${child.pid}); do taskset -p -c 1 $p; done; taskset -p -c 1 ${child.pid}`], { stdio: 'ignore' });
  return {
    url,
    catalogUrl: `http://127.0.0.1:${port}/`,
    async stop() {
      child.kill('SIGQUIT');
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fetches `url` on a connection of its own; returns the body and the milliseconds it took. */
function timedGet(url: string): Promise<{ ms: number; body: string }> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, body }));
      })
      .on('error', reject);
  });
}

async function patch(base: string, token: string, fields: object): Promise<void> {
  const res = await fetch(`${base}/api/products/text-tools`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(fields),
  });
  if (!res.ok) throw new Error(`PATCH failed: ${res.status} ${await res.text()}`);
}

/** `CATALOG_PRODUCTS` live products written straight into the database (registering each would hash a password). */
async function addCatalogProducts(databaseUrl: string): Promise<void> {
  const database = await openPublishingDatabase(databaseUrl);
  const repo = productsRepository(database.db, database.dialect);
  const now = new Date().toISOString();
  for (let i = 0; i < CATALOG_PRODUCTS; i++) {
    const id = `catalog-${String(i).padStart(4, '0')}`;
    const name = `Catalog Extension ${i}`;
    await repo.insert({
      id,
      name,
      state: 'live',
      fields: JSON.stringify({ name, description: `Nodes for task ${i}: read, clean and chart data`, style: { color1: '#123456', color2: '#abcdef' } }),
      edit_token_hash: randomBytes(32).toString('hex'),
      edit_token_id: randomBytes(4).toString('hex'),
      sftp_username: id,
      sftp_password_hash: 'unused',
      created_at: now,
      updated_at: now,
    });
  }
  await database.close();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/** Cached product page and catalog of `pier serve --only web` vs nginx serving their bytes, medians of rounds. */
export async function benchPages(): Promise<string> {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) return 'nginx is not installed (apt-get install nginx): skipped';
  const port = await freePort();
  const otherPort = await freePort();
  const dataDir = tempDir('pier-bench-pages-');
  const env: NodeJS.ProcessEnv = { PIER_DATA_DIR: dataDir, PIER_HTTP_PORT: String(port), PIER_DOWNLOAD_URL: 'https://downloads.example' };
  const token = JSON.parse(pierCli(env, 'staff', 'register', 'text-tools', '--name', 'Text Tools', '--json')).editToken as string;
  pierCli(env, 'staff', 'set-release', '5.4');
  const config = loadConfig(env);
  await addCatalogProducts(config.publishing.databaseUrl);
  const base = `http://127.0.0.1:${port}`;
  const server = await startPier(env, 'web', `${base}/healthz`);
  // A second instance on the same data: the PATCHes of the freshness run come through it.
  const otherBase = `http://127.0.0.1:${otherPort}`;
  const other = await startPier({ ...env, PIER_HTTP_PORT: String(otherPort) }, 'web', `${otherBase}/healthz`);
  pinToCpu(server.pid!, 1);
  pinToCpu(other.pid!, 0);
  pinToCpu(process.pid, 0);
  const nginx = { current: null as Awaited<ReturnType<typeof startNginx>> | null };
  try {
    await patch(base, token, FIELDS);
    // Live, with two uploaded labels and a workflow, recorded as the SFTP server records them.
    const database = await openPublishingDatabase(config.publishing.databaseUrl);
    await productsRepository(database.db, database.dialect).setState('text-tools', 'live', new Date().toISOString());
    const files = filesService({ storage: localStorage(path.join(dataDir, 'files')), repo: filesRepository(database.db), limits: DEFAULT_LIMITS });
    await files.ensureTree('text-tools');
    for (const p of ['update-site/5.3', 'update-site/5.4', 'workflows/demo']) await files.makeDir('text-tools', p);
    for (const p of ['update-site/5.3/content.xml', 'update-site/5.4/content.xml', 'update-site/5.4.zip', 'workflows/demo/Example.knwf']) {
      const upload = await files.beginUpload('text-tools', p);
      await upload.write(Buffer.from('x'), 0, 1, 0);
      await upload.commit();
    }
    await database.close();

    const pageUrl = `${base}/product/text-tools`;
    const catalogUrl = `${base}/`;
    const html = Buffer.from(await (await fetch(pageUrl)).arrayBuffer());
    if (!html.includes('Recommended')) throw new Error('the benchmark page lacks its install section');
    const catalog = Buffer.from(await (await fetch(catalogUrl)).arrayBuffer());
    if (!catalog.includes('Catalog Extension 0<')) throw new Error('the catalog does not list the benchmark products');
    nginx.current = await startNginx(html, catalog);
    for (const [ours, theirs] of [
      [html, nginx.current.url],
      [catalog, nginx.current.catalogUrl],
    ] as const) {
      const same = Buffer.from(await (await fetch(theirs)).arrayBuffer());
      if (!same.equals(ours)) throw new Error(`nginx does not serve the same bytes at ${theirs}`);
    }

    const fmt = (name: string, rs: Rate[]) =>
      `  ${name.padEnd(44)} ${median(rs.map((r) => r.rps)).toFixed(0).padStart(8)} req/s  p99 ${median(rs.map((r) => r.p99)).toFixed(1).padStart(6)} ms  (rounds: ${rs.map((r) => r.rps.toFixed(0)).join(', ')})`;
    const lines: string[] = [];
    const pages = [
      { what: `GET /product/:id (${html.length} bytes, cached)`, ours: pageUrl, ref: nginx.current.url },
      { what: `GET / (catalog of ${CATALOG_PRODUCTS + 1} live products, ${catalog.length} bytes, cached)`, ours: catalogUrl, ref: nginx.current.catalogUrl },
    ];
    for (const page of pages) {
      lines.push(`${page.what} vs nginx serving the same bytes; ${CONNECTIONS} connections, ${DURATION_S} s x ${ROUNDS} alternating rounds, medians; target ratio >= 0.70`);
      for (const tool of WRK ? (['autocannon', 'wrk'] as const) : (['autocannon'] as const)) {
        const ours: Rate[] = [];
        const ref: Rate[] = [];
        // Alternate, so drift from other work on the machine hits both sides alike.
        for (let i = 0; i < ROUNDS; i++) {
          ours.push(await measure(page.ours, tool));
          ref.push(await measure(page.ref, tool));
        }
        const ratio = median(ours.map((r) => r.rps)) / median(ref.map((r) => r.rps));
        lines.push(`${ours[0]?.tool}:`, fmt('pier serve --only web (SQLite)', ours), fmt('nginx, 1 worker', ref), `  ratio ${ratio.toFixed(2)} ${ratio >= 0.7 ? 'PASS' : 'FAIL'}`);
      }
    }

    // First render after a change: each PATCH changes what the page shows, then one GET on a new connection.
    const pageMs: number[] = [];
    const catalogMs: number[] = [];
    for (let i = 0; i < FIRST_RENDERS; i++) {
      await patch(base, token, { description: `Tokenize, stem and tag text (revision ${i})` });
      const first = await timedGet(pageUrl);
      if (!first.body.includes(`(revision ${i})`)) throw new Error('the first request after a PATCH did not show it');
      pageMs.push(first.ms);
      catalogMs.push((await timedGet(catalogUrl)).ms);
    }
    const p = median(pageMs);
    const c = median(catalogMs);
    lines.push(
      `first render after a PATCH (${FIRST_RENDERS} PATCHes, a GET on a new connection each, median / max):`,
      `  product page ${p.toFixed(1)} / ${Math.max(...pageMs).toFixed(1)} ms (target <= 20 ms) ${p <= 20 ? 'PASS' : 'FAIL'}`,
      `  catalog of ${CATALOG_PRODUCTS + 1} ${c.toFixed(1)} / ${Math.max(...catalogMs).toFixed(1)} ms (target <= 50 ms) ${c <= 50 ? 'PASS' : 'FAIL'}`,
    );

    lines.push(await staleAnswers(pageUrl, otherBase, token));
    return lines.join('\n');
  } finally {
    for (const child of [server, other]) {
      child.kill();
      await new Promise((r) => child.once('exit', r));
    }
    await nginx.current?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * GETs of the product page from CONNECTIONS keep-alive connections for DURATION_S while the other
 * instance PATCHes a new revision every PATCH_EVERY_MS. An answer is stale if it shows a revision
 * older than the last PATCH whose response came back more than FRESH_MS before the GET was sent.
 */
async function staleAnswers(pageUrl: string, otherBase: string, token: string): Promise<string> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  /** finishedAt[n]: when the PATCH writing revision n had been answered (performance.now()). */
  const finishedAt: number[] = [];
  let revision = 0;
  await patch(otherBase, token, { description: 'live revision 0.' });
  finishedAt[0] = performance.now();
  const until = performance.now() + DURATION_S * 1000;
  let total = 0;
  let stale = 0;
  const patcher = (async () => {
    while (performance.now() < until) {
      await new Promise((r) => setTimeout(r, PATCH_EVERY_MS));
      const next = revision + 1;
      await patch(otherBase, token, { description: `live revision ${next}.` });
      finishedAt[next] = performance.now();
      revision = next;
    }
  })();
  const get = (): Promise<string> =>
    new Promise((resolve, reject) => {
      http
        .get(pageUrl, { agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c) => {
            body += c;
          });
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
  const client = async () => {
    while (performance.now() < until) {
      const sentAt = performance.now();
      // The newest revision known finished more than the bound before this request was sent.
      let due = revision;
      while (due > 0 && (finishedAt[due] ?? Number.POSITIVE_INFINITY) > sentAt - FRESH_MS) due--;
      const body = await get();
      const seen = Number(/live revision (\d+)\./.exec(body)?.[1] ?? -1);
      total++;
      if (seen < due) stale++;
    }
  };
  await Promise.all([patcher, ...Array.from({ length: CONNECTIONS }, client)]);
  agent.destroy();
  return [
    `freshness under load: ${total} GETs of the product page in ${DURATION_S} s while another instance PATCHed it every ${PATCH_EVERY_MS} ms (${revision} PATCHes)`,
    `  answers older than a PATCH finished more than ${FRESH_MS} ms before the request: ${stale} (target 0) ${stale === 0 ? 'PASS' : 'FAIL'}`,
  ].join('\n');
}
