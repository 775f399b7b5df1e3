/**
 * Builds the runner's web UI (ui/main.tsx and ui/app.css) into hashed files with esbuild, and
 * a manifest that names them. Run by `npm ci` (prepare), `npm start` and the test runner, so
 * there is no set-up step of its own; the runner builds it at start when the manifest is missing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { DIST_DIR, INSTALL_DIR } from '../../infra/install-dir.js';

export interface UiManifest {
  js: string;
  css: string;
  /** Total JavaScript shipped, gzipped (the UI's size budget is 150 KB). */
  jsGzipBytes: number;
}

// Found from the installation's root, so the compiled program (dist/server) finds them too.
export const UI_SOURCE_DIR = path.join(INSTALL_DIR, 'src', 'runner', 'web', 'ui');
export const UI_OUT_DIR = path.join(DIST_DIR, 'ui');
const MANIFEST = 'manifest.json';

export function readUiManifest(outDir = UI_OUT_DIR): UiManifest | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(outDir, MANIFEST), 'utf8')) as UiManifest;
  } catch {
    return null;
  }
}

export async function buildUi(outDir = UI_OUT_DIR): Promise<UiManifest> {
  const esbuild = await import('esbuild');
  const staging = `${outDir.replace(/\/$/, '')}.tmp-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: [path.join(UI_SOURCE_DIR, 'main.tsx'), path.join(UI_SOURCE_DIR, 'app.css')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2022',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir: staging,
    metafile: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => path.basename(p));
  const js = outputs.find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (!js || !css) throw new Error(`the web UI build made ${outputs.join(', ')}`);
  const manifest: UiManifest = { js, css, jsGzipBytes: gzipSync(fs.readFileSync(path.join(staging, js)), { level: 9 }).length };
  fs.writeFileSync(path.join(staging, MANIFEST), JSON.stringify(manifest));
  // Swapped in whole: a runner serving the old build never sees half of the new one.
  const old = `${staging}.old`;
  if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  fs.renameSync(staging, outDir);
  fs.rmSync(old, { recursive: true, force: true });
  return manifest;
}
