/**
 * Bundles the vendor's `pier` (vendor.ts: `pier publish` and `pier ci`) into one ES module with
 * esbuild: `dist/cli/pier.mjs`, which the web part serves at `/cli/pier.mjs`. Run by
 * `npm ci`, `npm start` and the test runner (scripts/build-ui.ts), like the runner's web UI.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DIST_DIR, INSTALL_DIR } from '../infra/install-dir.js';

export const VENDOR_CLI_FILE = path.join(DIST_DIR, 'cli', 'pier.mjs');
const ENTRY = path.join(INSTALL_DIR, 'src', 'cli', 'vendor.ts');

// CommonJS dependencies (ssh2, commander) bundled into an ES module still ask for these.
const BANNER = [
  '#!/usr/bin/env node',
  "import { createRequire as __pierRequire } from 'node:module';",
  "import { fileURLToPath as __pierPath } from 'node:url';",
  "import { dirname as __pierDir } from 'node:path';",
  'const require = __pierRequire(import.meta.url);',
  'const __filename = __pierPath(import.meta.url);',
  'const __dirname = __pierDir(__filename);',
].join('\n');

export async function buildVendorCli(outFile = VENDOR_CLI_FILE): Promise<{ bytes: number; sha256: string }> {
  const esbuild = await import('esbuild');
  const staging = `${outFile}.tmp-${process.pid}`;
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  await esbuild.build({
    entryPoints: [ENTRY],
    outfile: staging,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    legalComments: 'none',
    // ssh2's optional native speed-ups: it falls back to plain JavaScript without them.
    external: ['cpu-features', '*.node'],
    banner: { js: BANNER },
    logLevel: 'error',
  });
  fs.chmodSync(staging, 0o755);
  fs.renameSync(staging, outFile);
  const data = fs.readFileSync(outFile);
  return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}
