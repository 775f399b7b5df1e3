import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { dialects } from '../../helpers/db.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../../helpers/publishing.js';

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const CHANGELOG = `# Changelog

<!-- keep this file tidy -->
## [Unreleased]
### Added
- Something coming

## [1.2.0.v20240105] - 2024-01-05
### Fixed
- A bug

\`\`\`
## [9.9.9] - not a release, inside code
- not an item
\`\`\`

## [1.1.0] - 2023-12-01
### Added
- First node
`;

const FULL = {
  name: 'Text Tools',
  description: 'Text processing nodes',
  text: '# Overview\n\nUse it on {{platformRelease}}.\n\n## Setup\n\nSee [docs](https://example.com/docs).',
  changelog: CHANGELOG,
  license: 'MIT License\n\nPermission is hereby granted…',
  faq: '## Does it work offline?\n\nYes.\n\n## Which platform?\n\nAny.',
  contact: { name: 'Ada Vendor', email: 'ada@vendor.example' },
  style: { color1: '#123456', color2: '#abc', backgroundImageUrl: 'https://cdn.example.com/bg.png', badgeColor: '#ff0000' },
  instructions: 'Restart the platform after installing.',
  icon: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill="#123456"/></svg>',
};

for (const target of dialects()) {
  describe(`PATCH /api/products/:id on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let pier: RunningPublishing;
    let token: string;
    let otherToken: string;

    before(async () => {
      db = await target.create();
      pier = await startPublishing(db.url, { failureLimits: { maxFailures: 1000 } });
      token = (await pier.service.products.register('text-tools', { name: 'Text Tools' })).editToken;
      otherToken = (await pier.service.products.register('other-ext', { name: 'Other' })).editToken;
    });
    after(async () => {
      await pier.close();
      await db.drop();
    });

    const get = async (id: string, t: string) => {
      const res = await fetch(`${pier.url}/api/products/${id}`, { headers: { authorization: `Bearer ${t}` } });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };

    test('sets every field and returns them, then GET returns the same', async () => {
      const res = await patchProduct(pier.url, 'text-tools', token, FULL);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.equal(res.json.pageUrl, 'http://pier.test/product/text-tools');
      assert.equal(res.json.state, 'hidden');
      const fields = res.json.fields as Record<string, unknown>;
      for (const key of ['name', 'description', 'text', 'changelog', 'license', 'faq', 'contact', 'instructions'] as const) {
        assert.deepEqual(fields[key], FULL[key], key);
      }
      assert.deepEqual(fields.style, { ...FULL.style, color2: '#abc' });
      assert.match(String(fields.icon), /^<svg[^>]*>.*<circle/s);
      const got = await get('text-tools', token);
      assert.equal(got.status, 200);
      assert.deepEqual(got.json.fields, fields);
    });

    test('style is replaced wholesale; other fields stay', async () => {
      const res = await patchProduct(pier.url, 'text-tools', token, { style: { color1: '#000000' } });
      assert.equal(res.status, 200);
      const fields = res.json.fields as Record<string, unknown>;
      assert.deepEqual(fields.style, { color1: '#000000' });
      assert.equal(fields.description, FULL.description);
      assert.equal(fields.changelog, FULL.changelog);
    });

    test('empty string removes instructions, backgroundImageUrl and badgeColor; null removes optional fields', async () => {
      await patchProduct(pier.url, 'text-tools', token, { style: FULL.style, instructions: 'x' });
      const res = await patchProduct(pier.url, 'text-tools', token, {
        instructions: '',
        style: { color1: '#111111', backgroundImageUrl: '', badgeColor: '' },
        license: null,
      });
      assert.equal(res.status, 200);
      const fields = res.json.fields as Record<string, unknown>;
      assert.equal('instructions' in fields, false);
      assert.equal('license' in fields, false);
      assert.deepEqual(fields.style, { color1: '#111111' });
      const bad = await patchProduct(pier.url, 'text-tools', token, { name: null });
      assert.equal(bad.status, 400);
      assert.equal((bad.json.errors as { field: string }[])[0]?.field, 'name');
      const empty = await patchProduct(pier.url, 'text-tools', token, { name: '  ' });
      assert.equal(empty.status, 400);
    });

    test('icon and iconBase64 clear each other; both at once is 400', async () => {
      let res = await patchProduct(pier.url, 'text-tools', token, { iconBase64: PNG_1PX });
      assert.equal(res.status, 200);
      let fields = res.json.fields as Record<string, unknown>;
      assert.equal(fields.iconBase64, PNG_1PX);
      assert.equal('icon' in fields, false);
      res = await patchProduct(pier.url, 'text-tools', token, { icon: FULL.icon });
      fields = res.json.fields as Record<string, unknown>;
      assert.equal('iconBase64' in fields, false);
      assert.ok(fields.icon);
      res = await patchProduct(pier.url, 'text-tools', token, { icon: FULL.icon, iconBase64: PNG_1PX });
      assert.equal(res.status, 400);
      res = await patchProduct(pier.url, 'text-tools', token, { iconBase64: Buffer.from('GIF89a-not-really? no: text').toString('base64').replace('R0lG', 'QUJD') });
      assert.equal(res.status, 400);
      assert.equal((res.json.errors as { field: string }[])[0]?.field, 'iconBase64');
    });

    test('icon SVG is sanitized: scripts, handlers, foreignObject and external references go', async () => {
      const hostile =
        '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script>' +
        '<foreignObject><div>x</div></foreignObject><image href="https://evil.example/x.png"/>' +
        '<a href="javascript:alert(3)"><rect width="5" height="5"/></a></svg>';
      const res = await patchProduct(pier.url, 'text-tools', token, { icon: hostile });
      assert.equal(res.status, 200, JSON.stringify(res.json));
      const icon = String((res.json.fields as Record<string, unknown>).icon);
      assert.doesNotMatch(icon, /script|onload|foreignObject|evil\.example|javascript:/i);
      assert.match(icon, /<rect/);
      const broken = await patchProduct(pier.url, 'text-tools', token, { icon: '<svg>\n<g>\n</svg>' });
      assert.equal(broken.status, 400);
      assert.equal((broken.json.errors as { field: string }[])[0]?.field, 'icon');
      const notSvg = await patchProduct(pier.url, 'text-tools', token, { icon: '<html></html>' });
      assert.equal(notSvg.status, 400);
    });

    test('invalid values name the field (and the line in Markdown)', async () => {
      const cases: [Record<string, unknown>, string, number?][] = [
        [{ style: { color1: 'red' } }, 'style.color1'],
        [{ style: { color2: '#12345' } }, 'style.color2'],
        [{ style: { backgroundImageUrl: 'ftp://x.example/a.png' } }, 'style.backgroundImageUrl'],
        [{ style: { backgroundImageUrl: '/relative.png' } }, 'style.backgroundImageUrl'],
        [{ style: { unknownThing: 1 } }, 'style.unknownThing'],
        [{ contact: { name: 'Ada' } }, 'contact.email'],
        [{ contact: { name: 'Ada', email: 'not-an-email' } }, 'contact.email'],
        [{ contact: { name: '', email: 'a@b.example' } }, 'contact.name'],
        [{ name: 42 }, 'name'],
        [{ description: ['x'] }, 'description'],
        [{ bogus: true }, 'bogus'],
        [{ changelog: '# A\n\n## [1.0.0] - 2023-02-29\n' }, 'changelog', 3],
        [{ changelog: '# A\n# B\n' }, 'changelog', 2],
        [{ changelog: '# A\n\n## 1.0.0 2024-01-01\n' }, 'changelog', 3],
        [{ faq: 'Just text, no questions.' }, 'faq'],
      ];
      for (const [body, field, line] of cases) {
        const res = await patchProduct(pier.url, 'text-tools', token, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status}`);
        assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/);
        const errors = res.json.errors as { field: string; line?: number }[];
        const hit = errors.find((e) => e.field === field);
        assert.ok(hit, `${JSON.stringify(body)}: expected an error on ${field}, got ${JSON.stringify(errors)}`);
        if (line !== undefined) assert.equal(hit.line, line, JSON.stringify(hit));
      }
    });

    test('every invalid field of one body is reported at once, type errors and rule errors alike', async () => {
      const res = await patchProduct(pier.url, 'text-tools', token, {
        name: '  ',
        contact: { name: 'Ada' },
        style: { color1: 'red', color2: 7 },
        description: ['x'],
        changelog: '# A\n\n## [1.0.0] - 2023-02-29\n',
        bogus: 1,
      });
      assert.equal(res.status, 400);
      const fields = (res.json.errors as { field: string }[]).map((e) => e.field).sort();
      assert.deepEqual(fields, ['bogus', 'changelog', 'contact.email', 'description', 'name', 'style.color1', 'style.color2'].sort());
    });

    test('property: whatever subset of fields is invalid, the answer names exactly those', async () => {
      const bad: [string, (b: Record<string, unknown>) => void][] = [
        ['name', (b) => (b.name = '')],
        ['description', (b) => (b.description = 3)],
        ['contact.email', (b) => (b.contact = { ...(b.contact as object), name: 'Ada' })],
        ['contact.name', (b) => (b.contact = { ...(b.contact as object), name: 'x\ny', email: 'a@b.example' })],
        ['style.color1', (b) => (b.style = { ...(b.style as object), color1: 'red' })],
        ['style.color2', (b) => (b.style = { ...(b.style as object), color2: false })],
        ['faq', (b) => (b.faq = 'no questions')],
        ['icon', (b) => (b.icon = '<html/>')],
        ['extra', (b) => (b.extra = 1)],
      ];
      await fc.assert(
        fc.asyncProperty(fc.subarray(bad, { minLength: 1 }), async (chosen) => {
          // contact.name and contact.email cannot both be set by these builders: keep one.
          const picked = chosen.some(([f]) => f === 'contact.name') ? chosen.filter(([f]) => f !== 'contact.email') : chosen;
          const body: Record<string, unknown> = {};
          for (const [, make] of picked) make(body);
          const res = await patchProduct(pier.url, 'text-tools', token, body);
          assert.equal(res.status, 400);
          const fields = (res.json.errors as { field: string }[]).map((e) => e.field).sort();
          assert.deepEqual(fields, picked.map(([f]) => f).sort());
        }),
        { numRuns: 25 },
      );
    });

    test('a request with any invalid field changes nothing at all', async () => {
      const before = await get('text-tools', token);
      const res = await patchProduct(pier.url, 'text-tools', token, { description: 'changed?', style: { color1: 'nope' } });
      assert.equal(res.status, 400);
      const afterwards = await get('text-tools', token);
      assert.deepEqual(afterwards.json, before.json);
    });

    test('warnings: unknown changelog sub-heading and relative links', async () => {
      const res = await patchProduct(pier.url, 'text-tools', token, {
        changelog: '# C\n\n## [1.0.0] - 2024-01-01\n### Tweaked\n- x\n',
        text: 'See [the docs](docs/readme.md).',
      });
      assert.equal(res.status, 200);
      const warnings = res.json.warnings as { field: string; line?: number; message: string }[];
      assert.ok(warnings.some((w) => w.field === 'changelog' && w.line === 4 && /Tweaked/.test(w.message)), JSON.stringify(warnings));
      assert.ok(warnings.some((w) => w.field === 'text' && /docs\/readme\.md/.test(w.message)));
    });

    test('dryRun validates and returns what would be stored, storing nothing', async () => {
      const before = await get('text-tools', token);
      const res = await patchProduct(pier.url, 'text-tools', token, { description: 'Dry description' }, { query: '?dryRun=true' });
      assert.equal(res.status, 200);
      assert.equal(res.json.dryRun, true);
      assert.equal((res.json.fields as Record<string, unknown>).description, 'Dry description');
      assert.deepEqual(await get('text-tools', token), before);
      const bad = await patchProduct(pier.url, 'text-tools', token, { style: { color1: 'x' } }, { query: '?dryRun=true' });
      assert.equal(bad.status, 400);
    });

    test('authentication: missing, wrong and other-product tokens get 401 with WWW-Authenticate; unknown product 404', async () => {
      // The last character always changes (a fixed replacement would be a no-op 1 time in 62).
      const altered = `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`;
      for (const t of [null, 'nonsense', otherToken, altered]) {
        const res = await patchProduct(pier.url, 'text-tools', t, { description: 'hijack' });
        assert.equal(res.status, 401, String(t));
        assert.match(String(res.headers.get('www-authenticate')), /^Bearer /);
        assert.equal(res.json.code, 'unauthorized');
      }
      const basic = await fetch(`${pier.url}/api/products/text-tools`, { headers: { authorization: `Basic ${token}` } });
      assert.equal(basic.status, 401);
      const missing = await patchProduct(pier.url, 'no-such-product', token, { description: 'x' });
      assert.equal(missing.status, 404);
      assert.notEqual((await get('text-tools', token)).json.fields, undefined);
      assert.notEqual(((await get('text-tools', token)).json.fields as Record<string, unknown>).description, 'hijack');
    });

    test('wrong content type is 415, malformed JSON names the line, non-object bodies are 400', async () => {
      const plain = await patchProduct(pier.url, 'text-tools', token, null, { contentType: 'text/plain', raw: '{"name":"x"}' });
      assert.equal(plain.status, 415);
      assert.equal(plain.json.code, 'unsupported_media_type');
      const broken = await patchProduct(pier.url, 'text-tools', token, null, { raw: '{\n  "name": "x",\n}' });
      assert.equal(broken.status, 400);
      assert.equal(broken.json.code, 'malformed_body');
      assert.equal((broken.json.errors as { line?: number }[])[0]?.line, 3);
      for (const raw of ['[]', '"text"', '42', 'null', '']) {
        const res = await patchProduct(pier.url, 'text-tools', token, null, { raw });
        assert.equal(res.status, 400, raw);
        assert.equal((res.json.errors as { field: string }[])[0]?.field, '(body)');
      }
      const proto = await patchProduct(pier.url, 'text-tools', token, null, { raw: '{"__proto__":{"x":1}}' });
      assert.equal(proto.status, 400);
    });

    test('bodies over the limit get 413, fields over their limit get 400', async () => {
      const huge = await patchProduct(pier.url, 'text-tools', token, { text: 'x'.repeat(3 * 1024 * 1024) });
      assert.equal(huge.status, 413);
      assert.equal(huge.json.code, 'payload_too_large');
      const long = await patchProduct(pier.url, 'text-tools', token, { name: 'n'.repeat(500) });
      assert.equal(long.status, 400);
      assert.match(String((long.json.errors as { message: string }[])[0]?.message), /limit/);
    });

    test('every successful PATCH is a revision with changed fields, token id and client address', async () => {
      await patchProduct(pier.url, 'text-tools', token, { description: 'Revision check' });
      const history = await pier.service.products.history('text-tools', 100);
      const latest = history[0]!;
      assert.deepEqual(latest.changedFields, ['description']);
      assert.equal(latest.changes.description, 'Revision check');
      assert.equal(latest.clientAddress, '127.0.0.1');
      assert.match(latest.tokenId, /^[0-9a-f]{8}$/);
      assert.ok(!JSON.stringify(history).includes(token), 'the token itself is never stored');
      // dry runs and failures are not revisions
      const count = history.length;
      await patchProduct(pier.url, 'text-tools', token, { description: 'dry' }, { query: '?dryRun=true' });
      await patchProduct(pier.url, 'text-tools', token, { style: { color1: 'bad' } });
      assert.equal((await pier.service.products.history('text-tools', 100)).length, count);
    });

    test('a placeholder with no platform release set is warned about, on dry runs too, until staff set one', async () => {
      const body = { text: 'Intro\n\nWorks on {{platformRelease}}.', faq: '## Which?\n\n{{platformRelease}}', license: 'MIT' };
      const placeholderWarnings = (json: Record<string, unknown>) =>
        (json.warnings as { field: string; line?: number; message: string }[]).filter((w) => /platformRelease/.test(w.message));
      for (const query of ['?dryRun=true', '']) {
        const res = await patchProduct(pier.url, 'text-tools', token, body, { query });
        assert.equal(res.status, 200);
        const warned = placeholderWarnings(res.json);
        assert.deepEqual(warned.map((w) => [w.field, w.line]), [['text', 3], ['faq', 3]], JSON.stringify(warned));
        assert.match(warned[0]?.message ?? '', /set-release/);
      }
      await pier.service.products.setPlatformRelease('5.4');
      const res = await patchProduct(pier.url, 'text-tools', token, body);
      assert.deepEqual(placeholderWarnings(res.json), []);
    });

    test('a rotated token stops working at once; the new one works', async () => {
      const { editToken } = await pier.service.products.rotateEditToken('other-ext');
      const old = await patchProduct(pier.url, 'other-ext', otherToken, { description: 'old token' });
      assert.equal(old.status, 401);
      const fresh = await patchProduct(pier.url, 'other-ext', editToken, { description: 'new token' });
      assert.equal(fresh.status, 200);
      otherToken = editToken;
    });
  });
}

describe('repeated failures from one address', () => {
  test('get 429 with Retry-After, also for a valid token until the ban ends', async () => {
    const [target] = dialects();
    const db = await target!.create();
    const pier = await startPublishing(db.url, { failureLimits: { maxFailures: 3, banMs: 30_000 } });
    try {
      const { editToken } = await pier.service.products.register('ban-me', { name: 'Ban' });
      for (let i = 0; i < 3; i++) {
        assert.equal((await patchProduct(pier.url, 'ban-me', 'pier_et_wrong', { description: 'x' })).status, 401);
      }
      const banned = await patchProduct(pier.url, 'ban-me', editToken, { description: 'x' });
      assert.equal(banned.status, 429);
      assert.equal(banned.json.code, 'too_many_requests');
      const retry = Number(banned.headers.get('retry-after'));
      assert.ok(retry > 0 && retry <= 30, String(retry));
    } finally {
      await pier.close();
      await db.drop();
    }
  });
});

for (const target of dialects()) {
  describe(`failed-token counting on ${target.name}`, () => {
    test('requests without a token never ban the address; presented tokens that fail still do', async () => {
      const db = await target.create();
      // The production limits: 10 failures within a minute ban the address.
      const pier = await startPublishing(db.url);
      try {
        const { editToken } = await pier.service.products.register('shared-nat', { name: 'Shared NAT' });
        // Anonymous clients behind the vendor's address (a NAT, a CI egress): no header, an
        // empty one, a bare scheme.
        const anonymous: Record<string, string>[] = [{}, { authorization: '' }, { authorization: 'Bearer' }, { authorization: 'Bearer   ' }];
        for (let i = 0; i < 24; i++) {
          const res = await fetch(`${pier.url}/api/products/shared-nat`, { headers: anonymous[i % anonymous.length] });
          assert.equal(res.status, 401, `anonymous request ${i + 1}`);
          await res.body?.cancel();
        }
        const patched = await patchProduct(pier.url, 'shared-nat', editToken, { description: 'still reachable' });
        assert.equal(patched.status, 200, JSON.stringify(patched.json));
        assert.equal((patched.json.fields as { description: string }).description, 'still reachable');

        // Ten presented tokens that fail (a wrong token, another scheme) do ban, also the valid token.
        for (let i = 0; i < 10; i++) {
          const auth = i % 2 === 0 ? 'Bearer pier_et_wrong' : 'Basic c2hhcmVkOm5hdA==';
          const res = await fetch(`${pier.url}/api/products/shared-nat`, { headers: { authorization: auth } });
          assert.equal(res.status, 401);
          await res.body?.cancel();
        }
        assert.equal((await patchProduct(pier.url, 'shared-nat', editToken, { description: 'banned' })).status, 429);
      } finally {
        await pier.close();
        await db.drop();
      }
    });
  });
}
