#!/usr/bin/env node
// The `pier` command. It runs the compiled program under dist/server (scripts/build-server.mjs,
// made by `npm ci`, `npm start` and `npm run build`): no TypeScript is compiled at run time.
// A build older than the sources is rebuilt here first (about a second, said on stderr), so
// whoever edits a file under src/ and runs `pier` runs what they wrote, never a stale build.
// PIER_FROM_SOURCE=1 runs the TypeScript sources through tsx instead (see README, Development).
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

if (process.env.PIER_FROM_SOURCE === '1') {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/index.ts');
} else {
  const { currentBuild } = await import('../scripts/build-state.mjs');
  let { entry, reason } = currentBuild(ROOT);
  if (!entry) {
    const why = reason === 'stale' ? 'the sources changed since the last build' : 'the program is not built yet';
    process.stderr.write(`pier: ${why}: building it (npm run build)…\n`);
    try {
      const { buildServer } = await import('../scripts/build-server.mjs');
      ({ entry } = await buildServer({ root: ROOT, log: (line) => process.stderr.write(`${line}\n`) }));
    } catch (e) {
      process.stderr.write(
        `pier: the build failed: ${e instanceof Error ? e.message : String(e)}\n` +
          `pier: fix the error and run \`npm run build\` in ${ROOT}, or run the sources with PIER_FROM_SOURCE=1\n`,
      );
      process.exit(1);
    }
  }
  // Stack traces name the TypeScript file and line (the build's linked source maps).
  process.setSourceMapsEnabled(true);
  await import(pathToFileURL(entry).href);
}
