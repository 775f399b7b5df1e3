import fs from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium, no downloads, no background traffic (common brief). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Screenshots for review go under test-output/ (git-ignored). */
export function screenshotPath(name: string): string {
  const dir = path.resolve('test-output', 'pages');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.png`);
}

export const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 360, height: 780 },
  // 390 CSS px, the common phone width: the node catalog is checked at it.
  { name: 'phone-390', width: 390, height: 844 },
] as const;
