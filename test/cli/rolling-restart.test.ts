// A rolling restart loses nothing (docs/operators.md#restarting-without-losing-anything-sigterm):
// two `pier serve` instances (web and runner) on one database behind nginx as the load balancer
// (Debian's nginx, retrying a request on the other instance when one refuses or resets the
// connection before answering, as load balancers do), under a steady load of page, API and runner
// requests. Each instance in turn gets SIGTERM, drains, exits and is started again; every request
// of the load must be answered 200 in full. Without the drain, answers cut while they stream fail
// the test.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from '../helpers/net.js';
import { dialects, tempDir } from '../helpers/db.js';
import { hasTool } from '../helpers/tools.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Instance {
  web: number;
  runner: number;
  child: ChildProcess | null;
  log: string;
}

async function startInstance(inst: Instance, env: NodeJS.ProcessEnv): Promise<void> {
  inst.log = '';
  const child = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,runner'], {
    env: { ...env, PIER_HTTP_PORT: String(inst.web), RUNNER_PORT: String(inst.runner) },
  });
  child.stdout!.on('data', (c) => {
    inst.log += c;
  });
  child.stderr!.on('data', (c) => {
    inst.log += c;
  });
  inst.child = child;
  for (let i = 0; i < 300; i++) {
    try {
      const [a, b] = await Promise.all([fetch(`http://127.0.0.1:${inst.web}/readyz`), fetch(`http://127.0.0.1:${inst.runner}/readyz`)]);
      if (a.status === 200 && b.status === 200) return;
    } catch {
      // not up yet
    }
    await pause(100);
  }
  throw new Error(`instance did not become ready:\n${inst.log}`);
}

async function stopInstance(inst: Instance): Promise<number | null> {
  const child = inst.child!;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  const code = await exited;
  inst.child = null;
  return code;
}

function startNginx(dir: string, port: number, runnerPort: number, instances: Instance[]): ChildProcess {
  const conf = path.join(dir, 'nginx.conf');
  const upstream = (name: string, key: 'web' | 'runner') => `upstream ${name} { ${instances.map((i) => `server 127.0.0.1:${i[key]} max_fails=0;`).join(' ')} }`;
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
  ${upstream('web', 'web')}
  ${upstream('runner', 'runner')}
  # A request cut before its answer began goes to the other instance, the PATCH too (the same
  # PATCH twice leaves the page as once). Connections a closing listener had queued but not yet
  # accepted are reset by the kernel, whatever the server does: only the balancer can retry them.
  proxy_next_upstream error timeout http_503 non_idempotent;
  proxy_next_upstream_tries 4;
  # Answers stream to the client as they come: one cut after it began cannot be retried, and
  # would show here as a failed request.
  proxy_buffering off;
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://web; } }
  server { listen 127.0.0.1:${runnerPort}; location / { proxy_pass http://runner; } }
}
`,
  );
  return spawn('nginx', ['-c', conf, '-p', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
}

interface Target {
  url: string;
  /** A PATCH (a dry run with the edit token): not idempotent, so nginx never retries it once sent. */
  patch?: { token: string };
}

/** One request over a kept-alive connection to the balancer; resolves with the status (0: no answer, -1: cut short). */
function send(agent: http.Agent, target: Target): Promise<number> {
  return new Promise((resolve) => {
    const body = target.patch ? JSON.stringify({ description: 'Rolling restarts lose nothing' }) : undefined;
    const req = http.request(
      target.url,
      {
        agent,
        method: target.patch ? 'PATCH' : 'GET',
        headers: target.patch ? { authorization: `Bearer ${target.patch.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body!) } : {},
      },
      (res) => {
        // An answer counts only if it arrived whole (its Content-Length, or a proper end).
        let got = 0;
        let ended = false;
        const length = Number(res.headers['content-length'] ?? Number.NaN);
        res.on('data', (c: Buffer) => {
          got += c.length;
        });
        res.on('end', () => {
          ended = true;
          resolve(Number.isNaN(length) || got === length ? (res.statusCode ?? 0) : -1);
        });
        res.on('error', () => resolve(0));
        res.on('close', () => {
          if (!ended) resolve(-1);
        });
      },
    );
    req.on('error', () => resolve(0));
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

for (const dialect of dialects()) {
  describe(`rolling restart of two instances behind nginx (${dialect.name})`, () => {
    const cleanup: (() => Promise<void> | void)[] = [];
    after(async () => {
      for (const c of cleanup.reverse()) await c();
    });

    test('every request of a steady load is answered 200 while each instance restarts in turn', { timeout: 180_000 }, async (t) => {
      if (!hasTool('nginx')) return t.skip('nginx is not installed');
      const db = await dialect.create();
      const runnerDb = await dialect.create();
      cleanup.push(() => db.drop(), () => runnerDb.drop());
      const dataDir = tempDir('pier-rolling-');
      cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PIER_DATA_DIR: dataDir,
        PIER_DATABASE_URL: db.url,
        RUNNER_DATABASE_URL: runnerDb.url,
        PIER_LOG_LEVEL: 'warn',
        PIER_DRAIN_SECONDS: '20',
        PIER_CRAWL_SETTLE_SECONDS: '0',
      };
      const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'rolling', '--name', 'Rolling', '--json'], { env, encoding: 'utf8' });
      assert.equal(reg.status, 0, reg.stderr);
      const { editToken } = JSON.parse(reg.stdout) as { editToken: string };
      const instances: Instance[] = [];
      for (let i = 0; i < 2; i++) instances.push({ web: await freePort(), runner: await freePort(), child: null, log: '' });
      // One after the other: the first start migrates, the second finds the schema ready.
      for (const inst of instances) await startInstance(inst, env);
      cleanup.push(async () => {
        for (const inst of instances) if (inst.child) await stopInstance(inst);
      });
      const [lbWeb, lbRunner] = [await freePort(), await freePort()];
      const nginxDir = tempDir('pier-rolling-nginx-');
      spawnSync('chmod', ['-R', 'a+rwX', nginxDir]);
      const nginx = startNginx(nginxDir, lbWeb, lbRunner, instances);
      cleanup.push(async () => {
        nginx.kill('SIGQUIT');
        await new Promise((r) => nginx.once('exit', r));
        fs.rmSync(nginxDir, { recursive: true, force: true });
      });
      const targets: Target[] = [
        { url: `http://127.0.0.1:${lbWeb}/product/rolling` },
        { url: `http://127.0.0.1:${lbWeb}/api/products/rolling?dryRun=true`, patch: { token: editToken } },
        { url: `http://127.0.0.1:${lbWeb}/` },
        { url: `http://127.0.0.1:${lbWeb}/sitemap.xml` },
        { url: `http://127.0.0.1:${lbRunner}/.well-known/oauth-authorization-server` },
        { url: `http://127.0.0.1:${lbRunner}/api/docs/json` },
      ];
      const probe = new http.Agent();
      for (let i = 0; i < 100; i++) {
        if ((await Promise.all(targets.map((t) => send(probe, t)))).every((s) => s === 200)) break;
        await pause(100);
      }

      // Steady load: 8 clients on kept-alive connections to the balancer, until told to stop.
      let running = true;
      const outcomes = new Map<number, number>();
      const clients = Array.from({ length: 8 }, async (_, k) => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        for (let n = 0; running; n++) {
          const status = await send(agent, targets[(n + k) % targets.length]!);
          outcomes.set(status, (outcomes.get(status) ?? 0) + 1);
        }
        agent.destroy();
      });
      await pause(1000);
      for (const inst of instances) {
        const code = await stopInstance(inst);
        assert.equal(code, 0, `a drained instance exits 0\n${inst.log}`);
        await pause(500);
        await startInstance(inst, env);
        await pause(1000);
      }
      running = false;
      await Promise.all(clients);
      const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
      assert.ok(total > 200, `a steady load ran: ${total} requests`);
      assert.deepEqual([...outcomes.keys()], [200], `every request answered 200: ${JSON.stringify(Object.fromEntries(outcomes))}\n${fs
          .readFileSync(path.join(nginxDir, 'error.log'), 'utf8')
          .split('\n')
          .filter((l) => !l.includes('connect() failed (111'))
          .join('\n')
          .slice(-3000)}`);
    });
  });
}
