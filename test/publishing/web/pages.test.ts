import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { CATALOG_PAGE_SIZE } from '../../../src/publishing/web/service.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { assertValidAtom } from './atom.js';
import { BASE_URL, DOWNLOAD_URL, FULL_FIELDS, type Site, startSite } from './helpers.js';
import { releaseAsIs } from '../releases/release-as-is.js';

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

for (const dialect of dialects()) {
  describe(`pages on ${dialect.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let site: Site;
    let token: string;

    before(async () => {
      db = await dialect.create();
      site = await startSite(db.url);
      token = await site.register('text-tools');
      await site.register('secret-tool', { name: 'Secret Tool', description: 'Hidden from everyone', changelog: '# C\n\n## [9.9.9] - 2024-01-01\n### Added\n- x' });
    });
    after(async () => {
      await site.close();
      await db.drop();
    });

    it('serves a hidden product page with a notice and noindex, then without them once live', async () => {
      const hidden = await get(`${site.url}/product/text-tools`);
      assert.equal(hidden.status, 200);
      assert.match(hidden.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(hidden.text, /<meta name="robots" content="noindex"\/>/);
      assert.match(hidden.text, /Not live yet\./);
      // Every feed a page links must answer: a hidden product has no feed, so its page links none.
      const feedLinks = (html: string) => [...html.matchAll(/<link rel="alternate" type="application\/atom\+xml"[^>]* href="([^"]+)"/g)].map((m) => m[1] as string);
      assert.deepEqual(feedLinks(hidden.text).filter((href) => href.startsWith('/product/')), []);
      for (const href of feedLinks(hidden.text)) assert.equal((await get(`${site.url}${href}`)).status, 200, href);
      await site.setState('text-tools', 'live');
      const live = await get(`${site.url}/product/text-tools`);
      assert.doesNotMatch(live.text, /noindex|Not live yet/);
      assert.match(live.text, /<link rel="canonical" href="http:\/\/pier\.test\/product\/text-tools"\/>/);
      assert.match(live.text, /<meta property="og:title" content="Text Tools · Pier"\/>/);
      assert.match(live.text, /<meta name="twitter:description" content="Tokenize, stem and tag text right inside your workflows"\/>/);
      assert.match(live.text, /<link rel="alternate" type="application\/atom\+xml" title="Text Tools: releases" href="\/product\/text-tools\/releases.atom"\/>/);
      for (const href of feedLinks(live.text)) assert.equal((await get(`${site.url}${href}`)).status, 200, href);
      const csp = Object.fromEntries((live.headers.get('content-security-policy') ?? '').split(/;\s*/).map((d) => [d.split(' ')[0], d]));
      assert.equal(csp['script-src'], "script-src 'self'", 'no inline or foreign script');
      assert.equal(csp['default-src'], "default-src 'none'");
    });

    it('routes node factory names up to 512 characters (fastify stops at 100); longer ones get a 400 problem, not 414', async () => {
      const factory = `${'org.example.nodes.'.padEnd(501, 'a')}NodeFactory`;
      assert.equal(factory.length, 512);
      const unknown = await get(`${site.url}/product/text-tools/nodes/${factory}`);
      assert.equal(unknown.status, 404, 'reaches the node page route: no such node');
      assert.match(unknown.headers.get('content-type') ?? '', /^text\/html/);
      const tooLong = await get(`${site.url}/product/text-tools/nodes/${factory}x`);
      assert.equal(tooLong.status, 400);
      assert.match(tooLong.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.deepEqual(JSON.parse(tooLong.text).errors, [{ field: '(path)', message: 'is longer than 512 characters' }]);
    });

    it('answers an unknown product with a 404 page', async () => {
      const res = await get(`${site.url}/product/no-such-thing`);
      assert.equal(res.status, 404);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(res.text, /<h1>Not found<\/h1>/);
      assert.match(res.text, /noindex/);
    });

    it('renders every field: changelog badges, FAQ anchors, license, contact, instructions', async () => {
      const { text } = await get(`${site.url}/product/text-tools`);
      assert.match(text, /<span class="version-badge" style="background:#ff8800;color:#111418;">1\.2\.0<\/span>/);
      for (const type of ['Added', 'Fixed', 'Changed', 'Security', 'Info']) {
        assert.match(text, new RegExp(`<span class="badge badge-${type.toLowerCase()}">${type}</span>`));
      }
      assert.match(text, /<h4 class="change-type">Performance<\/h4>/, 'unknown types render without a badge');
      assert.doesNotMatch(text, /hidden note/);
      assert.match(text, /<a href="https:\/\/issues\.example\/12" rel="nofollow ugc noopener">#12<\/a>/);
      assert.match(text, /<h3 id="does-it-work-offline"><a href="#does-it-work-offline">Does it work offline\?<\/a><\/h3>/);
      assert.match(text, /<h2 id="license">License<\/h2>\s*<div class="prose"><p>MIT License<\/p>/);
      assert.match(text, /Ada Vendor · <a href="mailto:ada@vendor\.example">ada@vendor\.example<\/a>/);
      assert.match(text, /Restart the platform after installing\./);
      assert.match(text, /<a href="#features">Features<\/a>/, 'text headings in the sidebar');
    });

    it('replaces {{platformRelease}} in text, code spans, code blocks and the FAQ once a release is set', async () => {
      const before = await get(`${site.url}/product/text-tools`);
      assert.match(before.text, /\{\{platformRelease\}\}/, 'left as written while no release is set');
      // Set by another process (the staff CLI) through its own connection.
      const other = await openPublishingDatabase(db.url);
      await productsRepository(other.db, other.dialect).putSetting('platform_release', '5.4');
      await other.close();
      const { text } = await get(`${site.url}/product/text-tools`);
      assert.doesNotMatch(text, /platformRelease/);
      assert.match(text, /Works with release 5\.4\./);
      assert.match(text, /<pre><code>https:\/\/downloads\.example\/text-tools\/5\.4\n<\/code><\/pre>/);
      assert.match(text, /Inline: <code>5\.4<\/code>/);
      assert.match(text, /Release 5\.4 or newer\./);
    });

    it('install section: uploaded labels, with URLs once released, recommended label, archives, example workflows; uploads show at once', async () => {
      // Files arrive as the SFTP server records them: another connection, as another process would.
      const other = await openPublishingDatabase(db.url);
      const files = filesService({ storage: localStorage(site.storageDir), repo: filesRepository(other.db), limits: DEFAULT_LIMITS });
      await files.ensureTree('text-tools');
      const put = async (p: string, content: string) => {
        const dir = p.split('/').slice(0, -1).join('/');
        if (dir.split('/').length > 1) await files.makeDir('text-tools', dir).catch(() => {});
        const upload = await files.beginUpload('text-tools', p);
        const buf = Buffer.from(content);
        await upload.write(buf, 0, buf.length, 0);
        await upload.commit();
      };
      try {
        const empty = await get(`${site.url}/product/text-tools`);
        assert.match(empty.text, /No update site has been uploaded yet\./);
        await put('update-site/5.3/content.xml', '<x/>');
        await put('update-site/5.4/content.xml', '<x/>');
        await put('update-site/5.4.zip', 'zip-bytes');
        await put('update-site/5.10/content.xml', '<x/>');
        await put('update-site/5.2.zip', 'zip');
        // Shown at once, not offered before their release: no URL, not recommended.
        const before = (await get(`${site.url}/product/text-tools`)).text;
        for (const l of ['5.3', '5.4', '5.10']) assert.match(before, new RegExp(`label-name">${l.replace('.', '\\.')}</span><span class="pill muted">Not released yet`));
        assert.doesNotMatch(before, /<code class="url"/);
        assert.match(before, /label-name">5\.2<\/span><span class="pill">Recommended/, 'the archive is what can be installed');
        // Released (the crawl that releases them also moves the page's key; here the next upload does).
        await releaseAsIs(other.db, site.storageDir, 'text-tools', '5.3', '5.4', '5.10');
        await put('workflows/demo/Text Example.knwf', 'wf');
        const { text } = await get(`${site.url}/product/text-tools`);
        const labels = [...text.matchAll(/<span class="label-name">([^<]+)<\/span>/g)].map((m) => m[1]);
        // The platform release (5.4, set above) first and recommended, then highest first; a
        // label uploaded only as an archive (5.2) is offered too.
        assert.deepEqual(labels, ['5.4', '5.10', '5.3', '5.2']);
        assert.match(text, /<li class="label-row recommended"><div class="label-head"><span class="label-name">5\.4<\/span><span class="pill">Recommended<\/span>/);
        assert.equal((text.match(/Recommended</g) ?? []).length, 1);
        assert.ok(text.includes(`<code class="url" id="url-5.4">${DOWNLOAD_URL}/text-tools/5.4</code>`));
        assert.ok(text.includes(`data-copy="${DOWNLOAD_URL}/text-tools/5.10"`));
        assert.ok(text.includes(`<a href="${DOWNLOAD_URL}/text-tools/5.4.zip">download the archive</a> (9 B, zip)`));
        assert.equal((text.match(/download the archive/g) ?? []).length, 1, 'only labels with an archive link one');
        // The archive-only label: its download, the platform's archive steps, no update-site URL.
        assert.ok(text.includes(`<a class="button" href="${DOWNLOAD_URL}/text-tools/5.2.zip">Download 5.2.zip</a>`));
        assert.match(text, /No update site URL for this label\. After downloading, in the platform choose <strong>Help › Install New Software…<\/strong>, click <strong>Add…<\/strong>, then <strong>Archive…<\/strong>/);
        assert.ok(!text.includes(`${DOWNLOAD_URL}/text-tools/5.2<`) && !text.includes(`${DOWNLOAD_URL}/text-tools/5.2"`));
        assert.ok(!text.includes('id="url-5.2"'));
        assert.ok(text.includes(`<a href="${DOWNLOAD_URL}/workflows/text-tools/demo/Text%20Example.knwf">demo/Text Example.knwf</a>`));
        assert.match(text, /<script src="\/static\/pier-[0-9a-f]+\.js" defer><\/script>/);

        // Without a matching platform release, the highest label is recommended.
        const otherRepo = productsRepository(other.db, other.dialect);
        await otherRepo.putSetting('platform_release', '6.0');
        assert.match((await get(`${site.url}/product/text-tools`)).text, /<span class="label-name">5\.10<\/span><span class="pill">Recommended/);
        await otherRepo.putSetting('platform_release', '5.4');
        await files.remove('text-tools', 'update-site/5.3/content.xml');
        assert.doesNotMatch((await get(`${site.url}/product/text-tools`)).text, /label-name">5\.3</);
      } finally {
        await other.close();
      }
    });

    it('shows every change on the next request: PATCH, state, with ETag revalidation', async () => {
      const first = await get(`${site.url}/product/text-tools`);
      const etag = first.headers.get('etag')!;
      assert.ok(etag);
      assert.equal(first.headers.get('cache-control'), 'public, max-age=0, s-maxage=30');
      assert.equal((await get(`${site.url}/product/text-tools`, { 'if-none-match': etag })).status, 304);
      const res = await patchProduct(site.url, 'text-tools', token, { description: 'Now with more nodes' });
      assert.equal(res.status, 200);
      const changed = await get(`${site.url}/product/text-tools`, { 'if-none-match': etag });
      assert.equal(changed.status, 200);
      assert.match(changed.text, /Now with more nodes/);
      assert.notEqual(changed.headers.get('etag'), etag);
      // Two PATCHes in quick succession both show (updated_at never repeats).
      await patchProduct(site.url, 'text-tools', token, { description: 'One' });
      await get(`${site.url}/product/text-tools`);
      await patchProduct(site.url, 'text-tools', token, { description: 'Two' });
      assert.match((await get(`${site.url}/product/text-tools`)).text, /<p class="tagline">Two<\/p>/);
      await site.setState('text-tools', 'hidden');
      assert.match((await get(`${site.url}/product/text-tools`)).text, /Not live yet/);
      await site.setState('text-tools', 'live');
      await patchProduct(site.url, 'text-tools', token, { description: FULL_FIELDS.description });
    });

    it('serves the icon with its type and a CSP that forbids scripts; raster icons too', async () => {
      const page = await get(`${site.url}/product/text-tools`);
      const src = /<img class="icon" src="([^"]+)"/.exec(page.text)?.[1];
      assert.ok(src?.startsWith('/product/text-tools/icon?v='));
      const icon = await get(`${site.url}${src}`);
      assert.equal(icon.status, 200);
      assert.equal(icon.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
      assert.match(icon.headers.get('content-security-policy') ?? '', /default-src 'none'.*sandbox/);
      assert.equal(icon.headers.get('x-content-type-options'), 'nosniff');
      assert.match(icon.headers.get('cache-control') ?? '', /immutable/);
      assert.match(icon.text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
      const r = await patchProduct(site.url, 'text-tools', token, { iconBase64: png.toString('base64') });
      assert.equal(r.status, 200);
      const raster = await fetch(`${site.url}/product/text-tools/icon`);
      assert.equal(raster.headers.get('content-type'), 'image/png');
      assert.equal(raster.headers.get('cache-control'), 'public, max-age=0, s-maxage=30');
      assert.deepEqual(Buffer.from(await raster.arrayBuffer()), png);
      await patchProduct(site.url, 'text-tools', token, { icon: FULL_FIELDS.icon });
      assert.equal((await get(`${site.url}/product/secret-tool/icon`)).status, 404);
    });

    it('serves a version badge with ETag that follows the changelog', async () => {
      const res = await get(`${site.url}/product/text-tools/badge.svg`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
      assert.match(res.text, /<title>Text Tools: 1\.2\.0<\/title>/);
      assert.match(res.text, /fill="#ff8800"/);
      const etag = res.headers.get('etag')!;
      assert.equal((await get(`${site.url}/product/text-tools/badge.svg`, { 'if-none-match': etag })).status, 304);
      await patchProduct(site.url, 'text-tools', token, { changelog: `${FULL_FIELDS.changelog.replace('## [1.2.0]', '## [1.3.0] - 2024-07-01\n### Fixed\n- y\n\n## [1.2.0]')}` });
      const next = await get(`${site.url}/product/text-tools/badge.svg`, { 'if-none-match': etag });
      assert.equal(next.status, 200);
      assert.match(next.text, /<title>Text Tools: 1\.3\.0<\/title>/);
      await patchProduct(site.url, 'text-tools', token, { changelog: FULL_FIELDS.changelog });
    });

    it('publishes valid Atom feeds of live products only, newest first', async () => {
      assert.equal((await get(`${site.url}/product/secret-tool/releases.atom`)).status, 404, 'hidden: no feed');
      const one = await get(`${site.url}/product/text-tools/releases.atom`);
      assert.equal(one.status, 200);
      assert.equal(one.headers.get('content-type'), 'application/atom+xml; charset=utf-8');
      const feed = assertValidAtom(one.text, `${BASE_URL}/product/text-tools/releases.atom`);
      assert.deepEqual(feed.entries?.map((e) => e.title?.value), ['1.2.0', '1.1.0', '1.0.0']);
      assert.equal(feed.entries?.[0]?.id, `${BASE_URL}/product/text-tools#release-1.2.0`);
      assert.equal(feed.entries?.[0]?.updated, '2024-06-01T00:00:00.000Z');
      assert.match(feed.entries?.[0]?.content?.value ?? '', /<h3>Added<\/h3><ul><li>Lemmatizer node<\/li><\/ul>/);
      assert.doesNotMatch(one.text, /Something upcoming/, 'unreleased changes are no entry');

      await site.register('later-tool', { name: 'Later Tool', changelog: '# C\n\n## [2.0.0] - 2024-08-01\n### Added\n- z\n\n## [0.1.0] - 2023-01-01\n### Added\n- a' });
      await site.setState('later-tool', 'live');
      const all = await get(`${site.url}/releases.atom`);
      const site_ = assertValidAtom(all.text, `${BASE_URL}/releases.atom`);
      const titles = site_.entries?.map((e) => e.title?.value);
      assert.deepEqual(titles, ['Later Tool 2.0.0', 'Text Tools 1.2.0', 'Text Tools 1.1.0', 'Text Tools 1.0.0', 'Later Tool 0.1.0']);
      assert.doesNotMatch(all.text, /Secret Tool|9\.9\.9/);
      await site.setState('later-tool', 'hidden');
      assert.doesNotMatch((await get(`${site.url}/releases.atom`)).text, /Later Tool/);
    });

    it('lists live products in sitemap.xml and points robots.txt at it', async () => {
      const map = await get(`${site.url}/sitemap.xml`);
      assert.match(map.text, /<loc>http:\/\/pier\.test\/product\/text-tools<\/loc>/);
      assert.doesNotMatch(map.text, /secret-tool|later-tool/);
      const robots = await get(`${site.url}/robots.txt`);
      assert.match(robots.text, /Sitemap: http:\/\/pier\.test\/sitemap\.xml/);
    });

    it('catalog: live cards only, search over name and description, pagination', async () => {
      const home = await get(`${site.url}/`);
      assert.match(home.text, /<a class="card" href="\/product\/text-tools"/);
      assert.doesNotMatch(home.text, /Secret Tool|secret-tool/);
      assert.match(home.text, /style="--c1:#123456;--c2:#abcdef;--fg:#ffffff;--scrim:rgb\(0 0 0 \/ \d+%\);"/);
      const byDesc = await get(`${site.url}/?q=${encodeURIComponent('STEM tag')}`);
      assert.match(byDesc.text, /1 extension matches “STEM tag”/);
      assert.match(byDesc.text, /href="\/product\/text-tools"/);
      assert.match((await get(`${site.url}/?q=hidden`)).text, /No extension matches/);
      assert.equal((await get(`${site.url}/?page=abc`)).status, 400);
      assert.equal((await get(`${site.url}/?q=${'x'.repeat(201)}`)).status, 400);

      for (let i = 0; i <= CATALOG_PAGE_SIZE; i++) {
        const id = `bulk-${String(i).padStart(2, '0')}`;
        await site.service.products.register(id, { name: `Bulk ${String(i).padStart(2, '0')}` });
        await site.setState(id, 'live');
      }
      const p1 = await get(`${site.url}/?q=bulk`);
      assert.equal((p1.text.match(/class="card"/g) ?? []).length, CATALOG_PAGE_SIZE);
      assert.match(p1.text, /Page 1 of 2/);
      assert.match(p1.text, /<a class="page-step" href="\/\?q=bulk&amp;page=2" rel="next">/);
      const p2 = await get(`${site.url}/?q=bulk&page=2`);
      assert.equal((p2.text.match(/class="card"/g) ?? []).length, 1);
      assert.match(p2.text, /Bulk 24/);
      assert.match((await get(`${site.url}/?page=99`)).text, /Page 2 of 2/);
    });
  });
}
