// `npm run bench pages`: requests/s of a cached product page served by `pier serve --only web`
// against nginx (Debian package) serving the same HTML bytes as a static file (issue 7: target
// >= 0.5). Same load tool and settings, same run; server on one CPU, load generator on the other.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_LIMITS, loadConfig } from '../src/infra/config.js';
import { localStorage } from '../src/infra/storage-local.js';
import { openPublishingDatabase } from '../src/publishing/db.js';
import { filesRepository } from '../src/publishing/files/repository.js';
import { filesService } from '../src/publishing/files/service.js';
import { productsRepository } from '../src/publishing/products/repository.js';
import { CONNECTIONS, DURATION_S, freePort, load, pierCli, pinToCpu, startPier, tempDir } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

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

async function startNginx(html: Buffer): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = tempDir('pier-bench-nginx-');
  const www = path.join(dir, 'www', 'product');
  fs.mkdirSync(www, { recursive: true });
  fs.writeFileSync(path.join(www, 'text-tools'), html);
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
    async stop() {
      child.kill('SIGQUIT');
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Cached product page of `pier serve --only web` vs nginx serving its bytes, median of rounds. */
export async function benchPages(): Promise<string> {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) return 'nginx is not installed (apt-get install nginx): skipped';
  const port = await freePort();
  const dataDir = tempDir('pier-bench-pages-');
  const env: NodeJS.ProcessEnv = { PIER_DATA_DIR: dataDir, PIER_HTTP_PORT: String(port), PIER_DOWNLOAD_URL: 'https://downloads.example' };
  const token = JSON.parse(pierCli(env, 'staff', 'register', 'text-tools', '--name', 'Text Tools', '--json')).editToken as string;
  pierCli(env, 'staff', 'set-release', '5.4');
  const base = `http://127.0.0.1:${port}`;
  const server = await startPier(env, 'web', `${base}/healthz`);
  pinToCpu(server.pid!, 1);
  pinToCpu(process.pid, 0);
  const nginx = { current: null as Awaited<ReturnType<typeof startNginx>> | null };
  try {
    const res = await fetch(`${base}/api/products/text-tools`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(FIELDS),
    });
    if (!res.ok) throw new Error(`PATCH failed: ${res.status} ${await res.text()}`);
    // Live, with two uploaded labels and a workflow, recorded as the SFTP server records them.
    const config = loadConfig(env);
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
    const html = Buffer.from(await (await fetch(pageUrl)).arrayBuffer());
    if (!html.includes('Recommended')) throw new Error('the benchmark page lacks its install section');
    nginx.current = await startNginx(html);
    const same = Buffer.from(await (await fetch(nginx.current.url)).arrayBuffer());
    if (!same.equals(html)) throw new Error('nginx does not serve the same bytes');

    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const fmt = (name: string, rs: Rate[]) =>
      `  ${name.padEnd(44)} ${median(rs.map((r) => r.rps)).toFixed(0).padStart(8)} req/s  p99 ${median(rs.map((r) => r.p99)).toFixed(1).padStart(6)} ms  (rounds: ${rs.map((r) => r.rps.toFixed(0)).join(', ')})`;
    const lines = [
      `GET /product/:id (${html.length} bytes, cached) vs nginx serving the same bytes; ${CONNECTIONS} connections, ${DURATION_S} s x ${ROUNDS} alternating rounds, medians; target ratio >= 0.50`,
    ];
    for (const tool of WRK ? (['autocannon', 'wrk'] as const) : (['autocannon'] as const)) {
      const ours: Rate[] = [];
      const ref: Rate[] = [];
      // Alternate, so drift from other work on the machine hits both sides alike.
      for (let i = 0; i < ROUNDS; i++) {
        ours.push(await measure(pageUrl, tool));
        ref.push(await measure(nginx.current.url, tool));
      }
      const ratio = median(ours.map((r) => r.rps)) / median(ref.map((r) => r.rps));
      lines.push(`${ours[0]?.tool}:`, fmt('pier serve --only web (SQLite)', ours), fmt('nginx, 1 worker', ref), `  ratio ${ratio.toFixed(2)}`);
    }
    return lines.join('\n');
  } finally {
    server.kill();
    await new Promise((r) => server.once('exit', r));
    await nginx.current?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
