import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PRESENTATION } from '../../../src/publishing/content/svg-allowlist.js';
import { cssUnescape, sanitizeSvg, sniffRasterImage } from '../../../src/publishing/content/svg.js';

const NS = 'xmlns="http://www.w3.org/2000/svg"';

/** Sanitizes and insists on success. */
function clean(markup: string): string {
  const result = sanitizeSvg(markup);
  assert.ok('svg' in result, `expected success, got ${JSON.stringify(result)}`);
  return result.svg;
}

describe('sanitizeSvg: keeps icons intact', () => {
  it('keeps drawing elements and presentation attributes, adding the SVG namespace', () => {
    const out = clean('<svg viewBox="0 0 24 24" width="24"><g transform="translate(1 2)"><circle cx="12" cy="12" r="10" fill="#f80"/></g></svg>');
    assert.equal(out, `<svg ${NS} viewBox="0 0 24 24" width="24"><g transform="translate(1 2)"><circle cx="12" cy="12" r="10" fill="#f80"/></g></svg>`);
  });

  it('keeps gradients referenced by url(#id) and rewrites xlink:href="#id" to href', () => {
    const out = clean(
      '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">' +
        '<defs><linearGradient id="g"><stop offset="0" stop-color="red"/></linearGradient><path id="p" d="M0 0h1"/></defs>' +
        '<rect width="4" height="4" fill="url(#g)" style="fill: url(\'#g\'); stroke:rgb(1,2,3)"/><use xlink:href="#p"/></svg>',
    );
    assert.equal(
      out,
      `<svg ${NS}><defs><linearGradient id="g"><stop offset="0" stop-color="red"/></linearGradient><path id="p" d="M0 0h1"/></defs>` +
        `<rect width="4" height="4" fill="url(#g)" style="fill:url('#g');stroke:rgb(1,2,3)"/><use href="#p"/></svg>`,
    );
  });

  it('keeps visible text escaped, decodes predefined entities and CDATA, leaves unknown entities literal', () => {
    const out = clean('<svg><title>A &amp; B</title><text x="1">1 &lt; 2 &#x41;<![CDATA[ <b>&amp; ]]>&nbsp;</text></svg>');
    assert.equal(out, `<svg ${NS}><title>A &amp; B</title><text x="1">1 &lt; 2 A &lt;b&gt;&amp;amp; &amp;nbsp;</text></svg>`);
  });

  it('unwraps <a> so linked artwork survives without the link', () => {
    assert.equal(clean('<svg><a href="https://x.example"><rect width="1" height="1"/></a></svg>'), `<svg ${NS}><rect width="1" height="1"/></svg>`);
  });
});

describe('sanitizeSvg: removes anything active or external', () => {
  it('drops script, foreignObject, style, image, animation and editor metadata with their content', () => {
    const out = clean(
      '<svg><script>alert(1)</script><script type="text/ecmascript"><![CDATA[alert(2)]]></script>' +
        '<foreignObject><div xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(3)"/></div></foreignObject>' +
        '<style>@import url(https://evil.example/x.css); rect{fill:red}</style><image href="https://evil.example/t.png"/>' +
        '<set attributeName="href" to="javascript:alert(4)"/><animate attributeName="href" values="javascript:alert(5)"/>' +
        '<metadata><rdf>x</rdf></metadata><iframe src="https://evil.example"/><rect width="1" height="1"/></svg>',
    );
    assert.equal(out, `<svg ${NS}><rect width="1" height="1"/></svg>`);
  });

  it('drops every on* handler and class, whatever the case', () => {
    const out = clean('<svg onload="alert(1)" ONCLICK="x"><rect onmouseover="x" onfocusin="y" class="btn" width="1"/></svg>');
    assert.equal(out, `<svg ${NS}><rect width="1"/></svg>`);
  });

  it('drops external, javascript: and data: references however they are spelled', () => {
    const hostile = [
      'href="https://evil.example/#x"',
      'href="javascript:alert(1)"',
      'href="&#106;avascript:alert(1)"',
      'href="java&#x09;script:alert(1)"',
      'href="JaVaScRiPt&#58;alert(1)"',
      'href="data:image/svg+xml;base64,PHN2Zz4="',
      'href="other.svg#icon"',
      'fill="url(https://evil.example/p)"',
      'fill="url( \'//evil.example/p\' )"',
      'mask="url(data:image/png;base64,AAAA)"',
      'style="fill:url(https://evil.example/p)"',
      'style="background-image:url(#ok)"',
      'style="fill:expression(alert(1))"',
      'style="fill:r\\65 d"',
      'style="fill:image-set(\'https://evil.example/a.png\' 1x)"',
      'filter="javascript:alert(1)"',
    ];
    for (const attr of hostile) {
      assert.equal(clean(`<svg><use ${attr}/><rect width="1"/></svg>`), `<svg ${NS}><use/><rect width="1"/></svg>`, attr);
    }
  });

  it('keeps the safe declarations of a style attribute and drops the rest', () => {
    const out = clean('<svg><rect width="1" style="fill:#fff; position:fixed; stroke-width:2px; width: 100vw"/></svg>');
    assert.equal(out, `<svg ${NS}><rect width="1" style="fill:#fff;stroke-width:2px"/></svg>`);
  });

  it('drops prefixed editor attributes and foreign namespaces', () => {
    const out = clean('<svg xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" inkscape:version="1"><g inkscape:label="L"><path d="M0 0"/></g></svg>');
    assert.equal(out, `<svg ${NS}><g><path d="M0 0"/></g></svg>`);
  });
});

describe('sanitizeSvg: rejects what is not a well-formed SVG', () => {
  it('rejects DOCTYPE and ENTITY declarations outright (billion laughs, XXE) with the line', () => {
    const laughs = '<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n <!ENTITY lol2 "&lol;&lol;">\n]>\n<svg>&lol2;</svg>';
    assert.deepEqual(sanitizeSvg(laughs), { error: 'DOCTYPE and ENTITY declarations are not allowed in SVG', line: 2 });
    const xxe = '<svg>\n<!ENTITY xxe SYSTEM "file:///etc/passwd">\n</svg>';
    assert.deepEqual(sanitizeSvg(xxe), { error: 'DOCTYPE and ENTITY declarations are not allowed in SVG', line: 2 });
    assert.equal((sanitizeSvg('<!doctype svg><svg/>') as { line?: number }).line, 1);
  });

  it('rejects malformed XML with the line of the problem', () => {
    const result = sanitizeSvg('<svg>\n  <g>\n    <rect width="1">\n  </g>\n</svg>');
    assert.ok('error' in result);
    assert.equal(result.line, 4);
    assert.match(result.error, /not well-formed XML/);
    const attr = sanitizeSvg('<svg>\n<rect width="1" width="2"/></svg>');
    assert.ok('error' in attr);
    assert.equal(attr.line, 2);
    assert.ok('error' in sanitizeSvg(''));
    assert.ok('error' in sanitizeSvg('not xml at all'));
  });

  it('requires exactly one <svg> root and nothing else at the top', () => {
    assert.deepEqual(sanitizeSvg('<html><svg/></html>'), { error: 'the root element must be <svg>, found <html>' });
    assert.deepEqual(sanitizeSvg('<svg><rect/></svg><svg/>'), { error: 'the SVG must have exactly one root element' });
    const trailing = sanitizeSvg('<svg><rect/></svg>\ntrailing');
    assert.ok('error' in trailing);
    assert.equal(trailing.line, 2);
  });

  it('rejects an SVG that draws nothing once sanitized', () => {
    for (const markup of ['<svg/>', '<svg><title>t</title><defs><path d="M0"/></defs></svg>', '<svg><script>alert(1)</script></svg>', '<svg> text only </svg>']) {
      const result = sanitizeSvg(markup);
      assert.ok('error' in result, markup);
      assert.match(result.error, /draws nothing/, markup);
    }
  });

  it('rejects absurd nesting instead of recursing without bound', () => {
    const deep = `<svg>${'<g>'.repeat(500)}<rect/>${'</g>'.repeat(500)}</svg>`;
    const result = sanitizeSvg(deep);
    assert.ok('error' in result);
    assert.match(result.error, /could not be read/);
  });
});

describe('sniffRasterImage', () => {
  const bytes = (...b: number[]) => Uint8Array.from(b);
  const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
  it('recognises PNG, JPEG, GIF and WebP by magic bytes', () => {
    assert.equal(sniffRasterImage(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0)), 'png');
    assert.equal(sniffRasterImage(bytes(0xff, 0xd8, 0xff, 0xe0)), 'jpeg');
    assert.equal(sniffRasterImage(ascii('GIF89a....')), 'gif');
    assert.equal(sniffRasterImage(ascii('GIF87a')), 'gif');
    assert.equal(sniffRasterImage(ascii('RIFF\x10\x00\x00\x00WEBPVP8 ')), 'webp');
  });

  it('returns null for anything else, including truncated signatures and SVG', () => {
    for (const b of [bytes(), bytes(0x89, 0x50, 0x4e, 0x47), ascii('GIF88a'), ascii('RIFF\x10\x00\x00\x00WAVE'), ascii('<svg/>'), bytes(0xff, 0xd8)]) {
      assert.equal(sniffRasterImage(b), null);
    }
  });
});

describe('sanitizeSvg: presentation attributes are judged as CSS values', () => {
  // Each made Chromium fetch from an outside host when the SVG was inline: CSS
  // escapes, hex escapes, comments and fetching functions other than url().
  const hostile = [
    'u\\rl(https://evil.example/a)',
    '\\75 rl(https://evil.example/a)',
    '\\000075rl(https://evil.example/a)',
    'U\\52L(https://evil.example/a)',
    "image-set('https://evil.example/a.png' 1x)",
    "-webkit-image-set('https://evil.example/a.png' 1x)",
    'url(#ok) , image(https://evil.example/a.png)',
    "cross-fade(url(#a), 'https://evil.example/b.png')",
    'src(https://evil.example/a)',
    'u/**/rl(https://evil.example/a)',
    'url(\\68ttps://evil.example/a)',
    "url('\\2f\\2f evil.example/a')",
    'url(javascript:alert(1))',
    'url(&#100;ata:image/png;base64,AAAA)',
    'element(#x)',
    'paint(x)',
  ];

  for (const attr of [...PRESENTATION].sort()) {
    it(`${attr}: drops every hostile value and keeps a plain one`, () => {
      for (const value of hostile) {
        const markup = `<svg><rect width="1" ${attr}="${value.replace(/"/g, '&quot;')}"/></svg>`;
        assert.equal(clean(markup), `<svg ${NS}><rect width="1"/></svg>`, `${attr}="${value}"`);
      }
      assert.equal(clean(`<svg><rect width="1" ${attr}="inherit"/></svg>`), `<svg ${NS}><rect width="1" ${attr}="inherit"/></svg>`);
    });
  }

  it('keeps local references and colour functions in presentation attributes', () => {
    assert.equal(
      clean('<svg><rect width="1" fill="url(#g)" stroke="rgb(1, 2, 3)" mask="url(\'#m\')" filter="url(#f)"/></svg>'),
      `<svg ${NS}><rect width="1" fill="url(#g)" stroke="rgb(1, 2, 3)" mask="url('#m')" filter="url(#f)"/></svg>`,
    );
  });

  it('unescapes CSS as the CSS Syntax spec does', () => {
    assert.equal(cssUnescape('\\75 rl'), 'url');
    assert.equal(cssUnescape('u\\rl'), 'url');
    assert.equal(cssUnescape('\\000075rl'), 'url');
    assert.equal(cssUnescape('a\\0 b'), 'a\uFFFDb');
    assert.equal(cssUnescape('a\\'), 'a\uFFFD');
  });

  it('drops style attributes that hide declarations in comments', () => {
    assert.equal(clean('<svg><rect width="1" style="fill:red/*;*/;stroke:blue"/></svg>'), `<svg ${NS}><rect width="1"/></svg>`);
  });
});
