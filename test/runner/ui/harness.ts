/**
 * The web UI under test: a real runner listening on a free port (SQLite, or PostgreSQL with
 * `databaseUrl`), headless Chromium, and a recorder of every request the UI makes, each checked
 * against the operations of the OpenAPI document (the UI is a client of the public API only).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import type { EmailSender } from '../../../src/runner/users/profile.js';
import { API_KEY, SETUP_TOKEN, startRunner, TestClock, type TestRunner } from '../helpers.js';

export const PASSWORD = 'a long enough password';
export const ADMIN = 'admin@example.com';
export const SCREENSHOTS = path.resolve('test-output/runner-ui');

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** `/api/runs/{id}` as a pattern that matches `/api/runs/abc`. */
function operationPattern(template: string): RegExp {
  return new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
}

export interface UiRunner {
  runner: TestRunner;
  base: string;
  /** The operations of /api/docs/json, as METHOD + path patterns. */
  operations: { method: string; path: RegExp; template: string }[];
  /** A session token of the first administrator (for set-up through the API). */
  adminToken: string;
  // biome-ignore lint/suspicious/noExplicitAny: answers of many shapes, read by the tests
  api(method: string, url: string, body?: unknown, token?: string): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
}

export async function startUiRunner(opts: { databaseUrl?: string; env?: Record<string, string>; setup?: boolean; emailSender?: EmailSender } = {}): Promise<UiRunner> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // The browser lives in real time (token expiry it offers, "3 minutes ago"): so does this runner.
  const clock = new TestClock();
  clock.now = () => new Date();
  const runner = await startRunner({ ...(opts.databaseUrl ? { databaseUrl: opts.databaseUrl } : {}), clock, env: { RUNNER_URL: base, ...opts.env }, emailSender: opts.emailSender });
  await runner.service.app.listen({ host: '127.0.0.1', port });
  const doc = (await (await fetch(`${base}/api/docs/json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const operations = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => ({ method: m.toUpperCase(), path: operationPattern(p), template: p })));
  const api = async (method: string, url: string, body?: unknown, token?: string) => {
    const res = await fetch(base + url, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: token.startsWith('rnr_') || token === API_KEY ? `ApiKey ${token}` : `Bearer ${token}` } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  let adminToken = '';
  if (opts.setup !== false) {
    const res = await api('POST', '/api/setup', { setupToken: SETUP_TOKEN, email: ADMIN, name: 'Ada Admin', password: PASSWORD });
    assert.equal(res.status, 201, JSON.stringify(res.json));
    adminToken = res.json.session.token;
  }
  return { runner, base, operations, adminToken, api, close: () => runner.close() };
}

/** Records the UI's requests to the runner; `undocumented()` lists those that match no operation. */
export class RequestRecorder {
  readonly seen: string[] = [];
  constructor(private readonly ui: UiRunner) {}

  attach(context: BrowserContext): void {
    context.on('request', (req) => {
      const u = new URL(req.url());
      if (u.origin !== this.ui.base) return;
      this.seen.push(`${req.method()} ${u.pathname}`);
    });
  }

  /** Requests to /api/ that no documented operation describes. */
  undocumented(): string[] {
    return this.seen.filter((s) => {
      const [method, p] = s.split(' ') as [string, string];
      if (!p.startsWith('/api/') || p.startsWith('/api/docs')) return false;
      return !this.ui.operations.some((o) => o.method === method && o.path.test(p));
    });
  }
}

/** Signs in through the UI's login page as a user would. */
export async function signIn(page: Page, base: string, email = ADMIN, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Projects' }).waitFor();
}

/** Saves a screenshot under test-output/runner-ui (CI keeps the folder). */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** axe-core in the page: serious and critical violations, as "rule: target" lines. */
export async function axeViolations(page: Page): Promise<string[]> {
  const source = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Run in an isolated world-like way: evaluate the source, then axe.run on the document.
  await page.evaluate(source);
  const result = (await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is a global the evaluated source defines
    const axe = (window as any).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: { id: string; impact: string; nodes: { target: string[] }[] }) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) }));
  })) as { id: string; impact: string; targets: string[] }[];
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.targets.slice(0, 3).join(', ')}`);
}

/** A screen as the tests want it: screenshot saved, no serious axe violation, nothing wider than the window (wide tables scroll in their own box). */
export async function checkScreen(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  assert.deepEqual(await axeViolations(page), [], name);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), `${name}: the page is wider than the window`);
}
