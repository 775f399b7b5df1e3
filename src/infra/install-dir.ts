/**
 * The installation's root folder (package.json, src/, dist/), for files found by their place in
 * it (the built web UI, the vendor's one-file CLI, the UI's sources). From the sources this
 * module is src/infra/install-dir.ts; in the compiled program it is bundled into a file of
 * dist/server/<build>/ (scripts/build-server.mjs): two folders down in one case, three in the
 * other, told apart by the module's own file name.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** True when this module runs from the TypeScript sources (through tsx), false in the build. */
export const FROM_SOURCE = /\.tsx?$/.test(import.meta.url);

export const INSTALL_DIR = fileURLToPath(new URL(FROM_SOURCE ? '../../' : '../../../', import.meta.url));

export const DIST_DIR = path.join(INSTALL_DIR, 'dist');
