import fs from 'node:fs';
import path from 'node:path';

/**
 * Makes release `n` the current release of a label in a storage folder, as a release does
 * (releases/service.ts: `<product>/releases/<label>/current` points at `<n>`): the download host
 * serves a label only from its current release. For tests of the download host alone, whose files
 * are written straight into `<product>/releases/<label>/<n>/`.
 */
export function makeCurrent(root: string, productId: string, label: string, n = 1): void {
  const folder = path.join(root, productId, 'releases', label);
  fs.mkdirSync(path.join(folder, String(n)), { recursive: true });
  fs.rmSync(path.join(folder, 'current'), { force: true });
  fs.symlinkSync(String(n), path.join(folder, 'current'));
}
