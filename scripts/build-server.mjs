#!/usr/bin/env node
// Compiles the `pier` program (the CLI, the server it starts and every worker entry) from the
// TypeScript under src/ to JavaScript under dist/server/<build>/, so that `pier` starts like a
// compiled program: no TypeScript loader at run time. Run by `npm ci` (prepare), `npm start`
// (prestart), `npm run build`, the test runner, and by bin/pier.js itself when the build is
// missing or older than the sources (scripts/build-state.mjs).
//
// Plain JavaScript on purpose: bin/pier.js imports it to rebuild, and must not need tsx for that.
//
// Layout of one build, every file in one folder (the code finds its neighbours through
// import.meta.url, see src/infra/install-dir.ts and src/infra/module-worker.ts):
//   pier.js                  the CLI (src/cli/index.ts)
//   <name>.js                each worker entry (WORKER_ENTRIES), started by new Worker
//   chunk-*.js, <name>-*.js  code shared by those entries, loaded when first needed
//   *.js.map                 source maps: stack traces name the TypeScript lines
//   assets/, supervisor.mjs  the files the code reads or spawns beside itself
//   meta.json                which sources and packages each .js file holds
// A new build goes to a new folder and `dist/server/current.json` is switched to it at once: a
// `pier serve` started from the previous build keeps loading its own chunks and workers.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CURRENT_FILE, currentBuild, SERVER_DIR, sourceFingerprint } from './build-state.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Every module that runs as a worker thread's entry (started through src/infra/module-worker.ts
 * `workerEntry(name, import.meta.url)`), by the name the build gives it. A test checks that
 * every `workerEntry` call in src/ names one of these (test/cli/build.test.ts).
 */
export const WORKER_ENTRIES = {
  'catalog-worker': 'src/publishing/web/catalog-worker.ts',
  'crawl-worker': 'src/publishing/crawler/crawl-worker.ts',
  'declared-worker': 'src/runner/workflows/declared-worker.ts',
  'render-worker': 'src/publishing/web/render-worker.ts',
  'storage-tree-worker': 'src/infra/storage-tree-worker.ts',
  'validate-worker': 'src/publishing/products/validate-worker.ts',
};

/** Files the code reads or spawns beside itself (by import.meta.url), copied into the build. */
const COPIED = [
  ['src/publishing/web/assets', 'assets'],
  ['src/runner/executor-agent/supervisor.mjs', 'supervisor.mjs'],
];

/**
 * Packages left to Node's own resolution from node_modules instead of being bundled: native
 * add-ons (better-sqlite3; ssh2, which loads its sshcrypto.node by a path relative to its own
 * file and, bundled, would silently fall back to slower JavaScript crypto; cpu-features),
 * packages that read their own files beside them at run time (@fastify/swagger-ui's static
 * assets, @fastify/swagger's package.json, pino's transport workers, esbuild's binary) and pg
 * (loaded only with PostgreSQL). Everything else is bundled: one file read instead of hundreds
 * of small module loads is most of the start-up time saved (bench/startup.ts).
 */
const EXTERNAL = ['better-sqlite3', 'ssh2', 'pg', 'pg-native', 'cpu-features', '*.node', 'esbuild', 'tsx', '@fastify/swagger', '@fastify/swagger-ui', 'pino', 'thread-stream'];

// CommonJS code bundled into ES modules still asks for these (require of an external package,
// __dirname in a dependency).
const BANNER = [
  "import { createRequire as __pierRequire } from 'node:module';",
  "import { fileURLToPath as __pierPath } from 'node:url';",
  "import { dirname as __pierDir } from 'node:path';",
  'const require = __pierRequire(import.meta.url);',
  'const __filename = __pierPath(import.meta.url);',
  'const __dirname = __pierDir(__filename);',
].join(' ');

/** How many builds are kept: the current one and a few before it, which a running `pier serve` may still use. */
const KEPT_BUILDS = 4;

/**
 * Builds into a new folder under dist/server and makes it the current build.
 * Returns the current build's entry (pier.js) and the time the build took.
 */
export async function buildServer({ root = ROOT, log = () => {} } = {}) {
  const started = performance.now();
  const esbuild = await import('esbuild');
  const serverDir = path.join(root, SERVER_DIR);
  // Read before compiling: a source saved while esbuild runs makes the next start rebuild.
  const fingerprint = sourceFingerprint(root);
  const id = `${Date.now().toString(36)}-${process.pid}`;
  const staging = path.join(serverDir, `.staging-${id}`);
  fs.mkdirSync(serverDir, { recursive: true });
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: { pier: 'src/cli/index.ts', ...WORKER_ENTRIES },
      outdir: staging,
      entryNames: '[name]',
      chunkNames: '[name]-[hash]',
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      // Identifiers are not shortened and names are kept (keepNames): functions and classes keep
      // the names they have in the sources (stack traces, profiles, `err.name`). Measured: the
      // full minifier starts no faster here (bench/startup.ts).
      minifyWhitespace: true,
      minifySyntax: true,
      keepNames: true,
      sourcemap: 'linked',
      // The maps point at src/ (kept beside the build): smaller maps, faster to read at a throw.
      sourcesContent: false,
      external: EXTERNAL,
      banner: { js: BANNER },
      legalComments: 'none',
      logLevel: 'silent',
      metafile: true,
    });
    // Which sources and packages each file of the build holds (for tests and for finding what a
    // command loads): { "chunk-X.js": ["src/…", "node_modules/…"] }.
    const contents = {};
    for (const [file, out] of Object.entries(result.metafile.outputs)) if (file.endsWith('.js')) contents[path.basename(file)] = Object.keys(out.inputs);
    fs.writeFileSync(path.join(staging, 'meta.json'), JSON.stringify(contents));
    for (const [from, to] of COPIED) fs.cpSync(path.join(root, from), path.join(staging, to), { recursive: true });
    fs.renameSync(staging, path.join(serverDir, id));
  } catch (e) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw e;
  }
  // The switch is one rename: a `pier` starting now reads either the old or the new pointer.
  const pointer = path.join(serverDir, `.${CURRENT_FILE}.${id}`);
  fs.writeFileSync(pointer, JSON.stringify({ build: id, fingerprint }));
  fs.renameSync(pointer, path.join(serverDir, CURRENT_FILE));
  prune(serverDir, id);
  const ms = performance.now() - started;
  log(`pier: program built into ${path.join(SERVER_DIR, id)} (${(ms / 1000).toFixed(1)} s)`);
  return { entry: path.join(serverDir, id, 'pier.js'), build: id, ms };
}

/** Removes all but the newest KEPT_BUILDS builds, and staging folders a killed build left. */
function prune(serverDir, current) {
  const entries = fs.readdirSync(serverDir, { withFileTypes: true }).filter((e) => e.isDirectory());
  const builds = entries
    .filter((e) => !e.name.startsWith('.'))
    .map((e) => ({ name: e.name, mtime: fs.statSync(path.join(serverDir, e.name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  const dayAgo = Date.now() - 86_400_000;
  const gone = [
    ...builds.slice(KEPT_BUILDS).filter((b) => b.name !== current),
    ...entries.filter((e) => e.name.startsWith('.staging-') && fs.statSync(path.join(serverDir, e.name)).mtimeMs < dayAgo),
  ];
  for (const b of gone) fs.rmSync(path.join(serverDir, b.name), { recursive: true, force: true });
}

// `node scripts/build-server.mjs [--if-stale]`: --if-stale (npm start) keeps a build that is
// current with the sources instead of making the same one again.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale') && currentBuild(ROOT).entry) console.error('pier: the program is built and current with the sources');
  else await buildServer({ log: (line) => console.error(line) });
}
