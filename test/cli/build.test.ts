/**
 * `pier` runs the compiled program under dist/server (scripts/build-server.mjs), as users run it:
 * no TypeScript loader at run time, worker threads started from built files, a build older than
 * the sources rebuilt before anything runs, and the command line loading only the code of the
 * command that runs. Each child is started with a module resolve hook that records every module
 * URL loaded, in every thread, so the tests see what really ran.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { WORKER_ENTRIES } from '../../scripts/build-server.mjs';
import { currentBuild } from '../../scripts/build-state.mjs';
import { freePort } from '../helpers/net.js';
import pkg from '../../package.json' with { type: 'json' };

const ROOT = process.cwd();
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-build-test-'));
after(() => fs.rmSync(work, { recursive: true, force: true }));

/** Node arguments that record every module URL the process (and each of its workers) resolves. */
function recorder(name: string): { args: string[]; env: Record<string, string>; urls(): string[] } {
  const dir = path.join(work, `rec-${name}`);
  fs.mkdirSync(dir);
  const log = path.join(dir, 'urls.log');
  fs.writeFileSync(
    path.join(dir, 'hooks.mjs'),
    `import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(process.env.PIER_TEST_MODULE_LOG, r.url + '\\n');
  return r;
}
`,
  );
  // --require, not --import: Node 20 runs --require preloads in worker threads too.
  fs.writeFileSync(path.join(dir, 'register.cjs'), `require('node:module').register(${JSON.stringify(new URL(`file://${dir}/hooks.mjs`).href)});\n`);
  return {
    args: ['--require', path.join(dir, 'register.cjs')],
    env: { PIER_TEST_MODULE_LOG: log },
    urls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
  };
}

const typescript = (urls: string[]) => urls.filter((u) => u.startsWith('file:') && (/\.tsx?$/.test(new URL(u).pathname) || u.includes('/node_modules/tsx/')));

/** The sources and packages in the built files `urls` loaded (meta.json of the build). */
function builtInputs(urls: string[]): string[] {
  const build = currentBuild(ROOT);
  assert.ok(build.entry, 'the test runner builds the program first (scripts/run-tests.mjs)');
  const dir = path.dirname(build.entry);
  const contents = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as Record<string, string[]>;
  return urls.flatMap((u) => (u.startsWith('file:') && path.dirname(new URL(u).pathname) === dir ? (contents[path.basename(new URL(u).pathname)] ?? []) : []));
}

before(() => {
  // As scripts/run-tests.mjs does; a no-op when it already has.
  if (!currentBuild(ROOT).entry) assert.equal(spawnSync(process.execPath, ['scripts/build-server.mjs'], { stdio: 'inherit' }).status, 0);
});

test('the built pier answers --version with no TypeScript loader: every module is JavaScript of dist/server or a package', () => {
  const rec = recorder('version');
  const r = spawnSync(process.execPath, [...rec.args, 'bin/pier.js', '--version'], { env: { ...process.env, ...rec.env }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), pkg.version);
  assert.equal(r.stderr, '', 'an up-to-date build is not rebuilt');
  const urls = rec.urls();
  assert.ok(urls.some((u) => /\/dist\/server\/[^/]+\/pier\.js$/.test(u)), `the program ran from dist/server: ${urls.join(' ')}`);
  assert.deepEqual(typescript(urls), []);
});

test('pier --help lists every command and loads none of the server: no fastify, database, SSH, Markdown or HTML code', () => {
  const rec = recorder('help');
  const r = spawnSync(process.execPath, [...rec.args, 'bin/pier.js', '--help'], { env: { ...process.env, ...rec.env }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  for (const command of ['serve', 'staff', 'runner', 'backup', 'restore', 'publish', 'ci']) assert.match(r.stdout, new RegExp(`^  ${command}\\b`, 'm'));
  const urls = rec.urls();
  const loaded = [...new Set([...builtInputs(urls), ...urls.filter((u) => u.includes('/node_modules/'))])];
  // The packages of the servers and the services, and our modules that open databases or build apps.
  const heavy =
    /node_modules\/(fastify|kysely|better-sqlite3|pg|ssh2|sanitize-html|markdown-it|typebox|prom-client|fast-xml-parser|@modelcontextprotocol\/sdk)\/|src\/infra\/(database|http)|src\/(publishing|runner)\/(.*\/)?(service|db|repository|index)\.ts/;
  assert.deepEqual(
    loaded.filter((f) => heavy.test(f)),
    [],
  );
  assert.ok(loaded.includes('src/cli/staff.ts') && loaded.includes('src/cli/serve.ts'), 'the commands themselves were registered from their modules');
});

test('PIER_FROM_SOURCE=1 runs the TypeScript sources through tsx (the developer path)', () => {
  const rec = recorder('source');
  const r = spawnSync(process.execPath, [...rec.args, 'bin/pier.js', '--version'], { env: { ...process.env, ...rec.env, PIER_FROM_SOURCE: '1' }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), pkg.version);
  assert.ok(rec.urls().some((u) => u.endsWith('/src/cli/index.ts')));
});

test('every worker entry the code starts (workerEntry) is an entry of the build, and every entry of the build is started', () => {
  const started = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(e.name)) for (const m of fs.readFileSync(p, 'utf8').matchAll(/workerEntry\('([^']+)', import\.meta\.url\)/g)) started.set(m[1]!, path.join(path.dirname(p), `${m[1]}.ts`));
    }
  };
  walk('src');
  assert.deepEqual(
    [...started].map(([name, file]) => [name, path.relative(ROOT, file)]).sort(),
    Object.entries(WORKER_ENTRIES).sort(),
    'the name given to workerEntry, the file beside its caller and the build entry agree',
  );
  // No worker entry is started any other way (a `new URL('./x.ts')` would need tsx in the build).
  const stray = spawnSync('grep', ['-rnE', "new URL\\('\\./[^']+\\.ts'", 'src'], { encoding: 'utf8' }).stdout.trim();
  assert.equal(stray, '');
});

test('the build maps back to the TypeScript: a stack trace from built code names the source file and line', () => {
  const build = currentBuild(ROOT);
  assert.ok(build.entry);
  const dir = path.dirname(build.entry);
  const contents = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as Record<string, string[]>;
  const chunk = Object.keys(contents).find((f) => contents[f]!.includes('src/infra/config.ts'));
  assert.ok(chunk, 'src/infra/config.ts is in the build');
  // loadConfig of the build, given a bad port, throws from inside config.ts; the stack is
  // formatted with source maps on, as bin/pier.js runs the program.
  const script = `process.setSourceMapsEnabled(true);
const { loadConfig } = await import(${JSON.stringify(new URL(`file://${path.join(dir, chunk)}`).href)});
try { loadConfig({ PIER_HTTP_PORT: 'not-a-port' }); } catch (e) { console.log(e.stack); }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /PIER_HTTP_PORT/);
  const frames = [...r.stdout.matchAll(/\((?:file:\/\/)?([^():]+):(\d+):\d+\)/g)].map((m) => ({ file: path.relative(ROOT, m[1]!), line: Number(m[2]) }));
  const inConfig = frames.filter((f) => f.file === 'src/infra/config.ts');
  assert.ok(inConfig.length > 0, `frames name src/infra/config.ts: ${r.stdout}`);
  // The line of loadConfig's frame is the line of the TypeScript source, inside loadConfig.
  const source = fs.readFileSync('src/infra/config.ts', 'utf8').split('\n');
  const start = source.findIndex((l) => l.startsWith('export function loadConfig')) + 1;
  const loadFrame = /at loadConfig \((?:file:\/\/)?[^():]+:(\d+):\d+\)/.exec(r.stdout);
  assert.ok(loadFrame, r.stdout);
  assert.ok(Number(loadFrame[1]) > start && Number(loadFrame[1]) < start + 200, `loadConfig's frame at line ${loadFrame[1]} (it starts at ${start})`);
});

describe('a worker thread of the built server', () => {
  let server: ChildProcess | undefined;
  after(() => {
    server?.kill('SIGKILL');
  });

  test('renders the product page from dist/server/<build>/render-worker.js, with no TypeScript anywhere', async () => {
    const data = path.join(work, 'data');
    const port = await freePort();
    const env = { ...process.env, PIER_DATA_DIR: data, PIER_HTTP_PORT: String(port), PIER_BASE_URL: `http://127.0.0.1:${port}`, PIER_LOG_LEVEL: 'silent' };
    const reg = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'built-render', '--name', 'Rendered By The Build', '--json'], { env, encoding: 'utf8' });
    assert.equal(reg.status, 0, reg.stderr);
    const rec = recorder('serve');
    server = spawn(process.execPath, [...rec.args, 'bin/pier.js', 'serve', '--only', 'web'], { env: { ...env, ...rec.env }, stdio: ['ignore', 'ignore', 'pipe'] });
    const child = server;
    await new Promise<void>((resolve, reject) => {
      let text = '';
      child.stderr?.on('data', (d) => {
        text += d;
        if (text.includes('web listening on')) resolve();
      });
      child.once('exit', () => reject(new Error(`pier serve ended: ${text}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/product/built-render`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /Rendered By The Build/);
    const urls = rec.urls();
    assert.ok(
      urls.some((u) => /\/dist\/server\/[^/]+\/render-worker\.js$/.test(u)),
      `the render worker started from the build: ${urls.filter((u) => u.includes('worker')).join(' ')}`,
    );
    assert.deepEqual(typescript(urls), []);
    // tsx in a worker starts an esbuild service process, left as `[esbuild] <defunct>` once the
    // worker ends; the build starts none: `serve --only web` has no child process at all.
    const children = spawnSync('ps', ['--ppid', String(child.pid), '-o', 'pid=,stat=,args='], { encoding: 'utf8' }).stdout.trim();
    assert.equal(children, '');
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    server = undefined;
  });
});

describe('a build older than the sources', () => {
  // A copy of the program (sources, scripts, bin) with the same packages, built and edited here.
  const copy = path.join(work, 'copy');
  before(() => {
    fs.mkdirSync(copy);
    for (const p of ['src', 'bin', 'scripts', 'package.json']) fs.cpSync(path.join(ROOT, p), path.join(copy, p), { recursive: true });
    fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(copy, 'node_modules'));
  });
  const pier = (...args: string[]) => spawnSync(process.execPath, [path.join(copy, 'bin/pier.js'), ...args], { cwd: copy, encoding: 'utf8', env: { ...process.env, PIER_FROM_SOURCE: '' } });

  test('is built on first use, not rebuilt while the sources stay, and rebuilt before it runs once a source changed', () => {
    const first = pier('--version');
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, /pier: the program is not built yet: building it/);
    assert.equal(first.stdout.trim(), pkg.version);

    const again = pier('--version');
    assert.equal(again.stderr, '');

    // A source edited after the build: the edit shows in the very next run, never the old code.
    const index = path.join(copy, 'src/cli/index.ts');
    const text = fs.readFileSync(index, 'utf8');
    assert.ok(text.includes('Pier: extension publishing service and workflow runner'));
    fs.writeFileSync(index, text.replace('Pier: extension publishing service and workflow runner', 'Pier, as edited a moment ago'));
    const edited = pier('--help');
    assert.equal(edited.status, 0, edited.stderr);
    assert.match(edited.stderr, /pier: the sources changed since the last build: building it/);
    assert.match(edited.stdout, /Pier, as edited a moment ago/);
  });

  test('that does not compile says why and how to build, and runs nothing', () => {
    const index = path.join(copy, 'src/cli/index.ts');
    fs.appendFileSync(index, '\nconst = ;\n');
    const broken = pier('--version');
    assert.equal(broken.status, 1);
    assert.equal(broken.stdout, '');
    assert.match(broken.stderr, /pier: the build failed: .*index\.ts/s);
    assert.match(broken.stderr, /run `npm run build` in .*, or run the sources with PIER_FROM_SOURCE=1/);
  });
});
