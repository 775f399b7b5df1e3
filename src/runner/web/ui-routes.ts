import fs from 'node:fs';
import path from 'node:path';
import type { FastifyReply } from 'fastify';
import type { HttpApp } from '../../infra/http.js';
import { PUBLIC } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import { buildUi, readUiManifest, UI_OUT_DIR, type UiManifest } from './ui-build.js';

/** The first path segments that are screens of the web UI (ui/app.tsx has the routes). */
export const UI_SECTIONS = ['login', 'setup', 'projects', 'workflows', 'runs', 'schedules', 'executors', 'users', 'account', 'connected-apps'] as const;

/**
 * Scripts and styles from our own origin only (no inline script, no eval), nothing framed,
 * nothing submitted elsewhere: what a page shows can come from any user or vendor, so an
 * injected tag must find nothing to run.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function indexHtml(m: UiManifest): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Pier runner</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%230b5cad'/%3E%3Cpath d='M4 12V4h4.5a2.5 2.5 0 0 1 0 5H4' stroke='white' stroke-width='1.8' fill='none'/%3E%3C/svg%3E">
<link rel="stylesheet" href="/ui/${m.css}">
<script type="module" src="/ui/${m.js}"></script>
</head>
<body>
<div id="app"></div>
<noscript><p class="noscript">The Pier runner's web UI needs JavaScript. Everything it does is also in the REST API: <a href="/api/docs">/api/docs</a>.</p></noscript>
</body>
</html>
`;
}

/**
 * The web UI: one HTML page for every screen (the browser's router picks the screen) and its
 * hashed, immutable script and style. The UI is a client of the public API only.
 */
export async function registerUiRoutes(app: HttpApp, log: { info(msg: string): void }): Promise<UiManifest> {
  let manifest = readUiManifest();
  if (!manifest) {
    log.info('building the web UI (dist/ui is missing)');
    manifest = await buildUi();
  }
  const built = manifest;
  const page = indexHtml(built);
  const files = new Map<string, { body: Buffer; type: string }>();
  for (const [name, type] of [
    [built.js, 'text/javascript; charset=utf-8'],
    [built.css, 'text/css; charset=utf-8'],
  ] as const) {
    files.set(name, { body: fs.readFileSync(path.join(UI_OUT_DIR, name)), type });
  }
  const options = { config: access(PUBLIC), schema: { hide: true } };
  const sendPage = (reply: FastifyReply) =>
    reply
      .header('content-security-policy', UI_CSP)
      .header('x-frame-options', 'DENY')
      // The page names the current build's files; a cached copy would name deleted ones.
      .header('cache-control', 'no-cache')
      .type('text/html; charset=utf-8')
      .send(page);
  app.get('/', options, async (_req, reply) => sendPage(reply));
  for (const section of UI_SECTIONS) {
    app.get(`/${section}`, options, async (_req, reply) => sendPage(reply));
    app.get(`/${section}/*`, options, async (_req, reply) => sendPage(reply));
  }
  app.get('/ui/:file', options, async (req, reply) => {
    const file = files.get((req.params as { file: string }).file);
    if (!file) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
    return reply.header('cache-control', 'public, max-age=31536000, immutable').type(file.type).send(file.body);
  });
  return built;
}
