// Label notices through PATCH /api/products/<id> `labels`
// (docs/vendors.md#deprecating-and-withdrawing-a-label): the rules (errors name their field,
// nothing stored on any error, dry run), `since`, and what the product page, the node page and the
// Atom feed show, on every database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { dialects } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';
import { assertValidAtom } from '../web/atom.js';
import { BASE_URL, DOWNLOAD_URL, type Site, startSite } from '../web/helpers.js';
import { NODE_FACTORY, type Seeder, seeder } from '../web/page-seed.js';

const ID = 'notice-tools';
const uploaded = ['update-site/5.3/content.jar', 'update-site/5.2/content.jar', 'update-site/4.7/content.jar', 'update-site/4.6.zip'];

type Problem = { field: string; message: string };

for (const target of dialects()) {
  describe(`label notices through PATCH on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let site: Site;
    let seed: Seeder;
    let token: string;
    const patch = (body: unknown, query = '') => patchProduct(site.url, ID, token, body, { query });
    const stored = async () =>
      (await (await fetch(`${site.url}/api/products/${ID}`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        fields: { labels?: Record<string, { status: string; message?: string; replacement?: string; since: string }> };
        updatedAt: string;
      };
    const page = async (path = `/product/${ID}`) => (await fetch(`${site.url}${path}`)).text();
    /** Asserts a 400 listing exactly these fields, with nothing stored. */
    async function refused(body: unknown, fields: string[]) {
      const before = await stored();
      const res = await patch(body);
      assert.equal(res.status, 400, JSON.stringify(res.json));
      const got = (res.json.errors as Problem[]).map((e) => e.field).sort();
      assert.deepEqual(got, [...fields].sort(), JSON.stringify(res.json.errors));
      assert.deepEqual(await stored(), before);
      return res.json.errors as Problem[];
    }

    before(async () => {
      db = await target.create();
      site = await startSite(db.url);
      seed = await seeder(db.url, site.storageDir);
      token = await site.register(ID, { name: 'Notice Tools', description: 'Three labels, one deprecated, one withdrawn' });
      await seed.upload(ID, uploaded);
      await seed.crawl(ID, '5.2', 'Tokenizer');
      await seed.release(ID, '5.3', '4.7');
    });
    after(async () => {
      await seed.close();
      await site.close();
      await db.drop();
    });

    test('a notice is set, shown by GET, stamped on status changes only, and removed by null or ""', async () => {
      const dry = await patch({ labels: { '5.2': { status: 'deprecated', message: 'Use 5.3.', replacement: '5.3' } } }, '?dryRun=true');
      assert.equal(dry.status, 200, JSON.stringify(dry.json));
      assert.equal((dry.json.fields as { labels: Record<string, { status: string }> }).labels['5.2']?.status, 'deprecated');
      assert.equal((await stored()).fields.labels, undefined, 'a dry run stores nothing');

      const first = await patch({ labels: { '5.2': { status: 'deprecated', message: '  Use 5.3:\n it fixes   the reader. ', replacement: '5.3' } } });
      assert.equal(first.status, 200, JSON.stringify(first.json));
      assert.deepEqual(first.json.changedFields, ['labels']);
      const a = (await stored()).fields.labels!;
      assert.equal(a['5.2']!.message, 'Use 5.3: it fixes the reader.', 'one paragraph, whitespace folded');
      assert.equal(a['5.2']!.replacement, '5.3');
      assert.ok(!Number.isNaN(Date.parse(a['5.2']!.since)));

      // Only the labels sent change; a new message keeps `since`, a new status moves it.
      assert.equal((await patch({ labels: { '5.2': { status: 'deprecated', message: 'Use 5.3 instead.', replacement: '5.3' } } })).status, 200);
      const b = (await stored()).fields.labels!;
      assert.equal(b['5.2']!.since, a['5.2']!.since);
      assert.equal(b['5.2']!.message, 'Use 5.3 instead.');
      assert.equal((await patch({ labels: { '4.7': { status: 'withdrawn', replacement: '5.3' } } })).status, 200);
      const c = (await stored()).fields.labels!;
      assert.deepEqual(Object.keys(c).sort(), ['4.7', '5.2']);
      assert.equal(c['5.2']!.since, a['5.2']!.since);
      assert.equal((await patch({ labels: { '4.7': { status: 'deprecated' } } })).status, 200);
      const d = (await stored()).fields.labels!;
      assert.ok(d['4.7']!.since > c['4.7']!.since, 'withdrawn → deprecated is a new status');
      assert.equal(d['4.7']!.replacement, undefined, 'a notice is replaced as sent');

      // Removal: null or "" per label; unknown labels' removal is a no-op.
      assert.equal((await patch({ labels: { '4.7': '', '4.6': null } })).status, 200);
      assert.deepEqual(Object.keys((await stored()).fields.labels!), ['5.2']);
      assert.equal((await patch({ labels: null })).status, 200);
      assert.equal((await stored()).fields.labels, undefined);

      // The history holds each change.
      const history = await fetch(`${site.url}/api/products/${ID}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(history.status, 200);
    });

    test('every problem is listed with its field and nothing is stored', async () => {
      assert.equal((await patch({ labels: { '4.7': { status: 'withdrawn' } } })).status, 200);
      await refused({ labels: { '9.9': { status: 'deprecated' } } }, ['labels.9.9']);
      await refused({ labels: { '5.2': { status: 'deprecated', replacement: '9.9' } } }, ['labels.5.2.replacement']);
      await refused({ labels: { '5.2': { status: 'deprecated', replacement: '5.2' } } }, ['labels.5.2.replacement']);
      // 4.7 is withdrawn (stored), so it replaces nothing; nor does a label withdrawn in the same body.
      await refused({ labels: { '5.2': { status: 'deprecated', replacement: '4.7' } } }, ['labels.5.2.replacement']);
      await refused({ labels: { '5.2': { status: 'deprecated', replacement: '5.3' }, '5.3': { status: 'withdrawn' } } }, ['labels.5.2.replacement']);
      await refused({ labels: { '5.2': { status: 'retired' } } }, ['labels.5.2.status']);
      await refused({ labels: { '5.2': { message: 'no status' } } }, ['labels.5.2.status']);
      await refused({ labels: { '5.2': { status: 'deprecated', message: 'x'.repeat(501) } } }, ['labels.5.2.message']);
      await refused({ labels: { '5.2': { status: 'deprecated', message: 'bell\u0007' } } }, ['labels.5.2.message']);
      await refused({ labels: { '5.2': { status: 'deprecated', message: 'one\n\ntwo' } } }, ['labels.5.2.message']);
      await refused({ labels: { '5.2': { status: 'deprecated', extra: 1 } } }, ['labels.5.2.extra']);
      await refused({ labels: { '../x': { status: 'deprecated' } } }, ['labels.../x']);
      await refused({ labels: { '5.2': 42 } }, ['labels.5.2']);
      await refused({ labels: [] }, ['labels']);
      // Cycles: 5.2 → 5.3 → 5.2.
      await refused({ labels: { '5.2': { status: 'deprecated', replacement: '5.3' }, '5.3': { status: 'deprecated', replacement: '5.2' } } }, [
        'labels.5.2.replacement',
      ]);
      assert.equal((await patch({ labels: { '5.2': { status: 'deprecated', replacement: '5.3' } } })).status, 200);
      const errors = await refused({ labels: { '5.3': { status: 'deprecated', replacement: '5.2' } } }, ['labels.5.3.replacement']);
      assert.match(errors[0]!.message, /circle: 5\.3 → 5\.2 → 5\.3/);
      // Withdrawing the label another notice names as replacement.
      await refused({ labels: { '5.3': { status: 'withdrawn' } } }, ['labels.5.3.status']);
      // Several problems at once, with another field's.
      await refused({ name: '', labels: { '9.9': { status: 'deprecated' }, '5.3': { status: 'nope' } } }, ['name', 'labels.9.9', 'labels.5.3.status']);
      // More than 200 labels.
      const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`1.${i}`, null]));
      await refused({ labels: many }, ['labels']);
      assert.equal((await patch({ labels: null })).status, 200);
    });

    test('arbitrary labels bodies: never a 5xx, errors name a field, nothing stored on error', async () => {
      const labelName = fc.constantFrom('5.3', '5.2', '4.7', '4.6', '9.9', '', '..', 'a/b', '5.2\u0000');
      const notice = fc.oneof(
        fc.constant(null),
        fc.constant(''),
        fc.jsonValue(),
        fc.record(
          {
            status: fc.oneof(fc.constantFrom('deprecated', 'withdrawn'), fc.jsonValue()),
            message: fc.oneof(fc.string({ maxLength: 600 }), fc.constant(null), fc.jsonValue()),
            replacement: fc.oneof(labelName, fc.constant(null), fc.jsonValue()),
          },
          { requiredKeys: [] },
        ),
      );
      const body = fc.oneof(fc.record({ labels: fc.dictionary(labelName, notice, { maxKeys: 4 }) }), fc.record({ labels: fc.jsonValue() }));
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          const before = await stored();
          const res = await patch(b);
          assert.ok(res.status === 200 || res.status === 400, `status ${res.status} for ${JSON.stringify(b)}: ${JSON.stringify(res.json)}`);
          if (res.status === 400) {
            for (const e of res.json.errors as Problem[]) assert.match(e.field, /^labels(\.|$)/, JSON.stringify(res.json.errors));
            assert.deepEqual(await stored(), before);
          } else {
            // Whatever was accepted keeps the invariants.
            const labels = (await stored()).fields.labels ?? {};
            for (const [label, n] of Object.entries(labels)) {
              assert.ok(['5.3', '5.2', '4.7', '4.6'].includes(label));
              if (n.replacement) assert.notEqual(labels[n.replacement]?.status, 'withdrawn');
              assert.notEqual(n.replacement, label);
            }
          }
        }),
        { numRuns: 120 },
      );
      assert.equal((await patch({ labels: null })).status, 200);
    });

    test('pages: withdrawn not offered, deprecated banner with its replacement, node page notice, Atom entries', async () => {
      const set = await patch({
        labels: {
          '5.2': { status: 'deprecated', message: 'Use 5.3: it fixes the tokenizer on long texts.', replacement: '5.3' },
          '4.7': { status: 'withdrawn', message: 'Broken on Windows.', replacement: '5.3' },
        },
      });
      assert.equal(set.status, 200, JSON.stringify(set.json));
      const html = await page();
      assert.ok(!html.includes(`${DOWNLOAD_URL}/${ID}/4.7`), 'the withdrawn label is not offered');
      assert.ok(html.includes(`${DOWNLOAD_URL}/${ID}/5.2`) && html.includes(`${DOWNLOAD_URL}/${ID}/5.3`));
      const entry = html.slice(html.indexOf('id="label:5.2"'));
      assert.ok(entry.length < html.length, 'the 5.2 entry has its anchor');
      assert.match(entry.slice(0, entry.indexOf('</li>')), /class="label-notice"[\s\S]*Deprecated[\s\S]*Use 5\.3: it fixes the tokenizer on long texts\.[\s\S]*<a href="#label:5\.3">5\.3<\/a>/);
      assert.ok(html.includes('id="label:5.3"'), 'the link target exists');
      assert.ok(!html.includes('The recommended label'), 'the recommended 5.3 is not deprecated');

      // The node page of a node crawled only in 5.2 carries the notice.
      const node = await page(`/product/${ID}/nodes/${encodeURIComponent(NODE_FACTORY)}`);
      assert.match(node, /class="label-notice"[\s\S]*Label 5\.2 is deprecated[\s\S]*<a href="\/product\/notice-tools#label:5\.3">5\.3<\/a>/);

      // The recommended label deprecated: said near the top of the page.
      assert.equal((await patch({ labels: { '5.3': { status: 'deprecated', message: 'Moving to 5.4 soon.' } } })).status, 200);
      const top = await page();
      assert.ok(top.indexOf('The recommended label 5.3 is deprecated.') > 0);
      assert.ok(top.indexOf('The recommended label 5.3 is deprecated.') < top.indexOf('id="install"'));
      assert.equal((await patch({ labels: { '5.3': null } })).status, 200);

      // Atom: the product feed (live products only) and the site feed get an entry per notice.
      await site.setState(ID, 'live');
      const labels = (await stored()).fields.labels!;
      const xml = await (await fetch(`${site.url}/product/${ID}/releases.atom`)).text();
      const feed = assertValidAtom(xml, `${BASE_URL}/product/${ID}/releases.atom`);
      const byTitle = new Map((feed.entries ?? []).map((e) => [String((e.title as { value?: string })?.value ?? e.title), e]));
      const deprecated = byTitle.get('5.2 deprecated');
      const withdrawn = byTitle.get('4.7 withdrawn');
      assert.ok(deprecated && withdrawn, [...byTitle.keys()].join(', '));
      assert.equal(Date.parse(String(deprecated.updated)), Date.parse(labels['5.2']!.since));
      const content = (e: typeof deprecated) => String((e.content as { value?: string })?.value ?? e.content);
      assert.match(content(deprecated), /Use 5\.3: it fixes the tokenizer on long texts\./);
      assert.ok(content(deprecated).includes(`${DOWNLOAD_URL}/${ID}/5.3`));
      assert.match(content(withdrawn), /withdrawn[\s\S]*Broken on Windows\./);
      const siteXml = await (await fetch(`${site.url}/releases.atom`)).text();
      assert.ok(siteXml.includes('Notice Tools 4.7 withdrawn'), 'the site feed has the entry too');
      await site.setState(ID, 'hidden');
      assert.equal((await patch({ labels: null })).status, 200);
    });
  });
}
