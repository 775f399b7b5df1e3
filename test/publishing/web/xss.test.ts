// An XSS corpus over every field a vendor controls never runs script in Chromium on the product
// page, the catalog, the feeds, the badge or the icon; and sanitized SVG never fetches from
// outside when inlined (presentation attributes are judged as CSS values).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { PRESENTATION } from '../../../src/publishing/content/svg-allowlist.js';
import { sanitizeSvg } from '../../../src/publishing/content/svg.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { needsTool } from '../../helpers/tools.js';
import { launchChromium } from './browser.js';
import { type Site, startSite } from './helpers.js';
import { COLOR_PAYLOADS, EMAIL_PAYLOADS, MARKUP_PAYLOADS, SVG_PAYLOADS, URL_PAYLOADS } from './xss-corpus.js';

const sqlite = dialects()[0]!;

/** Puts one value in one field; a refusal (400) is fine, anything else is not. */
async function tryPatch(site: Site, id: string, token: string, body: Record<string, unknown>, stored: string[]): Promise<void> {
  const res = await patchProduct(site.url, id, token, body);
  assert.ok(res.status === 200 || res.status === 400, `${id} ${Object.keys(body)}: ${res.status} ${JSON.stringify(res.json)}`);
  if (res.status === 200) stored.push(`${id}:${Object.keys(body)[0]}`);
}

describe('XSS corpus in Chromium', needsTool('chromium'), () => {
  let db: { url: string; drop(): Promise<void> };
  let site: Site;
  let browser: Browser;
  const ids: string[] = [];
  const stored: string[] = [];

  before(async () => {
    assert.ok(MARKUP_PAYLOADS.length + URL_PAYLOADS.length + COLOR_PAYLOADS.length + EMAIL_PAYLOADS.length + SVG_PAYLOADS.length >= 40);
    db = await sqlite.create();
    site = await startSite(db.url);
    await site.service.products.setPlatformRelease('5.4');
    const register = async (id: string) => {
      const creds = await site.service.products.register(id, { name: `Product ${id}` });
      ids.push(id);
      return creds.editToken;
    };
    for (const [i, p] of MARKUP_PAYLOADS.entries()) {
      const id = `m-${i}`;
      const token = await register(id);
      const fields: Record<string, unknown>[] = [
        { name: p },
        { description: p },
        { text: `# ${p}\n\n${p}\n\n- ${p}\n\n> ${p}` },
        { faq: `## ${p}\n\n${p}\n\n## Second\n\n${p}` },
        { license: p },
        { instructions: p },
        { changelog: `# Changelog\n\n## [1.0.${i}] - 2024-01-0${(i % 9) + 1}\n\n${p}\n\n### Added\n- ${p}\n### ${p}\n- ${p}\n` },
        { contact: { name: p, email: 'vendor@x.example' } },
      ];
      for (const f of fields) await tryPatch(site, id, token, f, stored);
    }
    for (const [i, url] of URL_PAYLOADS.entries()) {
      const id = `u-${i}`;
      await tryPatch(site, id, await register(id), { style: { color1: '#123456', backgroundImageUrl: url } }, stored);
    }
    for (const [i, color] of COLOR_PAYLOADS.entries()) {
      const id = `c-${i}`;
      const token = await register(id);
      await tryPatch(site, id, token, { style: { color1: color } }, stored);
      await tryPatch(site, id, token, { style: { color1: '#123456', badgeColor: color } }, stored);
    }
    for (const [i, email] of EMAIL_PAYLOADS.entries()) {
      const id = `e-${i}`;
      await tryPatch(site, id, await register(id), { contact: { name: 'N', email } }, stored);
    }
    for (const [i, svg] of SVG_PAYLOADS.entries()) {
      const id = `s-${i}`;
      await tryPatch(site, id, await register(id), { icon: svg, changelog: '# C\n\n## [1.0.0] - 2024-01-01\n### Added\n- x' }, stored);
    }
    for (const id of ids) await site.setState(id, 'live');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await site?.close();
    await db?.drop();
  });

  /**
   * A context that records dialogs and every request that leaves the machine (aborted). Our
   * Content-Security-Policy is removed from responses: it would block inline script by itself,
   * and this corpus must show that escaping and the sanitizer alone keep script out.
   */
  async function watchedContext(): Promise<{ context: BrowserContext; dialogs: string[]; outside: string[] }> {
    const context = await browser.newContext();
    const dialogs: string[] = [];
    const outside: string[] = [];
    await context.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === '127.0.0.1') {
        const response = await route.fetch();
        const headers = { ...response.headers() };
        delete headers['content-security-policy'];
        return route.fulfill({ response, headers });
      }
      outside.push(url.href);
      return route.abort();
    });
    context.on('page', (p) => p.on('dialog', (d) => {
      dialogs.push(d.message());
      d.dismiss().catch(() => {});
    }));
    return { context, dialogs, outside };
  }

  async function visit(page: Page, path: string): Promise<void> {
    await page.goto(`${site.url}${path}`, { waitUntil: 'load' });
    // Give event handlers (onload, onerror, autofocus) their chance to run.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    const pwned = await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned);
    assert.equal(pwned, undefined, `script ran on ${path}`);
    // Nothing that could run later either: handlers, script URLs, foreign scripts, frames, forms.
    const active = await page.evaluate(() => {
      const found: string[] = [];
      for (const el of Array.from(document.querySelectorAll('*'))) {
        for (const a of Array.from(el.attributes)) {
          if (/^on/i.test(a.name)) found.push(`${el.tagName} ${a.name}`);
          if (/^\s*(javascript|data|vbscript):/i.test(a.value) && /href|src|action|data/i.test(a.name)) found.push(`${el.tagName} ${a.name}=${a.value}`);
        }
        const tag = el.tagName.toLowerCase();
        if (tag === 'script' && !(el.getAttribute('src') ?? '').startsWith('/static/')) found.push('inline script');
        if (['iframe', 'object', 'embed', 'base', 'meta'].includes(tag) && el.closest('main')) found.push(tag);
        // The site's own search and filter forms (GET to its own pages); any other form is not ours.
        const ours =
          el.matches('form.works-filter[action="/"], .node-search-form > form[action="/nodes"], form.changes-form') &&
          (el.getAttribute('method') ?? '').toLowerCase() === 'get' &&
          /^\/(nodes|product\/[^/]+\/changes)?$/.test(el.getAttribute('action') ?? '');
        if (tag === 'form' && el.closest('main') && !ours) found.push('form');
      }
      return found;
    });
    assert.deepEqual(active, [], `active content on ${path}`);
  }

  it('stores most of the corpus (so the pages really carry it)', () => {
    // Every Markdown field takes any text; only URLs, colours, emails and some SVGs are refused.
    assert.ok(stored.length >= MARKUP_PAYLOADS.length * 6, `only ${stored.length} fields stored`);
  });

  it('never runs script on product pages, their feeds, badges and icons', async () => {
    const { context, dialogs, outside } = await watchedContext();
    const page = await context.newPage();
    for (const id of ids) {
      await visit(page, `/product/${id}`);
      await visit(page, `/product/${id}/releases.atom`);
      await visit(page, `/product/${id}/badge.svg`);
      const icon = await page.request.get(`${site.url}/product/${id}/icon`);
      if (icon.ok()) await visit(page, `/product/${id}/icon`);
    }
    assert.deepEqual(dialogs, []);
    assert.deepEqual(outside.filter((u) => !u.startsWith('https://img.example/')), [], 'no request leaves except the vendor background images');
    await context.close();
  });

  it('never runs script on the catalog, search results and the site feed', async () => {
    const { context, dialogs } = await watchedContext();
    const page = await context.newPage();
    const pages = Math.ceil(ids.length / 24);
    for (let n = 1; n <= pages; n++) await visit(page, `/?page=${n}`);
    assert.ok((await page.locator('a.card').count()) > 0);
    for (const q of ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', 'onerror']) {
      await visit(page, `/?q=${encodeURIComponent(q)}`);
    }
    await visit(page, '/releases.atom');
    await visit(page, '/sitemap.xml');
    assert.deepEqual(dialogs, []);
    await context.close();
  });

  it('inline sanitized SVG never fetches from outside, for every presentation attribute', async () => {
    const values = [
      'u\\rl(https://evil.example/1)',
      '\\75 rl(https://evil.example/2)',
      "image-set('https://evil.example/3.png' 1x)",
      'url(https://evil.example/4)',
      "-webkit-image-set('https://evil.example/5.png' 1x)",
    ];
    const icons: string[] = [];
    const raw: string[] = [];
    for (const attr of PRESENTATION) {
      for (const v of values) {
        const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><rect width="20" height="20" ${attr}="${v.replace(/"/g, '&quot;')}"/><text ${attr}="${v.replace(/"/g, '&quot;')}">t</text></svg>`;
        raw.push(svg);
        const clean = sanitizeSvg(svg);
        assert.ok('svg' in clean, attr);
        icons.push(clean.svg);
      }
    }
    const run = async (svgs: string[]) => {
      const { context, outside } = await watchedContext();
      const page = await context.newPage();
      await page.route(`${site.url}/inline`, (route) => route.fulfill({ contentType: 'text/html', body: `<!doctype html><body>${svgs.join('')}</body>` }));
      await page.goto(`${site.url}/inline`, { waitUntil: 'load' });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
      await context.close();
      return outside.filter((u) => u.includes('evil.example'));
    };
    // The control shows that Chromium does fetch through these attributes when unsanitized.
    assert.ok((await run(raw)).length > 0, 'the unsanitized control fetches from outside');
    assert.deepEqual(await run(icons), []);
  });
});
