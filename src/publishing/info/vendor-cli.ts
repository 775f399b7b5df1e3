/**
 * The vendor's one-file `pier` (`pier publish`, `pier ci`), built into dist/cli/pier.mjs by
 * `npm ci` / `npm start` (src/cli/vendor-build.ts) and served by the web part at
 * `/cli/pier.mjs`: a vendor's machine or CI job needs only Node.js to publish.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DIST_DIR } from '../../infra/install-dir.js';

export const VENDOR_CLI_PATH = '/cli/pier.mjs';
const BUILT = path.join(DIST_DIR, 'cli', 'pier.mjs');

export interface VendorCli {
  data: Buffer;
  sha256: string;
}

/** The built file, read again only when it changed on disk; null when it was never built. */
export function vendorCliFile(file = BUILT): () => VendorCli | null {
  let known: (VendorCli & { version: string }) | null = null;
  return () => {
    const st = fs.statSync(file, { throwIfNoEntry: false });
    if (!st) return null;
    const version = `${st.ino}:${st.mtimeMs}:${st.size}`;
    if (known?.version !== version) {
      const data = fs.readFileSync(file);
      known = { data, sha256: createHash('sha256').update(data).digest('hex'), version };
    }
    return known;
  };
}
