// The site's own stylesheet and script, served from /static/ under content-hashed names so
// browsers may keep them forever; a new build changes the name. No CDN, fonts or third-party
// scripts anywhere (docs/vendors.md#your-page-badge-and-feeds).
import { createHash } from 'node:crypto';
import fs from 'node:fs';

export interface StaticAsset {
  path: string;
  type: string;
  body: Buffer;
}

function load(file: string, type: string): StaticAsset {
  const body = fs.readFileSync(new URL(`./assets/${file}`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const [base, ext] = file.split('.');
  return { path: `/static/${base}-${hash}.${ext}`, type, body };
}

export const STYLESHEET = load('pier.css', 'text/css; charset=utf-8');
export const SCRIPT = load('pier.js', 'text/javascript; charset=utf-8');
export const STATIC_ASSETS: readonly StaticAsset[] = [STYLESHEET, SCRIPT];
