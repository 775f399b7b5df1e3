// Hostile input for every field a vendor controls (at least 40 payloads).
// Each payload, if it ever ran, would open a dialog or set window.__pwned.

/** HTML/Markdown payloads: go into every Markdown field, and the single-line ones into name, description, contact name. */
export const MARKUP_PAYLOADS: string[] = [
  '<script>alert(1)</script>',
  '<script>window.__pwned=1</script>',
  '<img src=x onerror=alert(1)>',
  '<img src="x" onerror="window.__pwned=1">',
  '<svg onload=alert(1)>',
  '<svg><script>window.__pwned=1</script></svg>',
  '<iframe src="javascript:alert(1)"></iframe>',
  '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
  '<body onload=alert(1)>',
  '<details open ontoggle=alert(1)>x</details>',
  '<a href="javascript:alert(1)">click</a>',
  '<a href="JaVaScRiPt:alert(1)">click</a>',
  '<a href="java&#x09;script:alert(1)">tab</a>',
  '<a href="&#106;avascript:alert(1)">entity</a>',
  '[md link](javascript:alert(1))',
  '[md link entity](javascript&#58;alert(1))',
  '[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '![img](x" onerror="alert(1))',
  '![img](javascript:alert(1))',
  '<object data="javascript:alert(1)"></object>',
  '<embed src="javascript:alert(1)">',
  '<form action="javascript:alert(1)"><button>go</button></form>',
  '<input autofocus onfocus=alert(1)>',
  '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
  '<style>@import "javascript:alert(1)";</style>',
  '<div style="background:url(javascript:alert(1))">s</div>',
  '<div style="position:fixed;inset:0;z-index:9999">cover</div>',
  '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
  '<base href="javascript:alert(1)//">',
  '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
  '<template><script>alert(1)</script></template>',
  '"><script>alert(1)</script>',
  "'><img src=x onerror=alert(1)>",
  '</title><script>alert(1)</script>',
  '</textarea><script>alert(1)</script>',
  '<!--><img src=x onerror=alert(1)>-->',
  '<a href="https://example.com" onclick="alert(1)" target="_blank">ok</a>',
  '`<script>alert(1)</script>` and ```<img src=x onerror=alert(1)>```',
  '{{platformRelease}}<script>alert(1)</script>',
  ']]><script xmlns="http://www.w3.org/1999/xhtml">alert(1)</script>',
  '<x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>',
  '&lt;script&gt;alert(1)&lt;/script&gt;',
];

/** style.backgroundImageUrl values: either refused on PATCH or harmless inside url("…"). */
export const URL_PAYLOADS: string[] = [
  'javascript:alert(1)',
  'https://img.example/a.png");background:url(javascript:alert(1)',
  'https://img.example/a.png"onload="alert(1)',
  "https://img.example/a.png');}</style><script>alert(1)</script>",
  'https://img.example/a\\"b.png',
  'data:image/svg+xml,<svg onload=alert(1)>',
];

/** style colours: refused unless they are plain hex. */
export const COLOR_PAYLOADS: string[] = ['red;}</style><script>alert(1)</script>', '#fff" onmouseover="alert(1)', 'expression(alert(1))'];

/** Contact emails. */
export const EMAIL_PAYLOADS: string[] = ['"><script>alert(1)</script>@x.example', 'a@x.example?subject=<script>alert(1)</script>', 'javascript:alert(1)//@x.example'];

/** Icons: sanitized on PATCH and again when served. */
export const SVG_PAYLOADS: string[] = [
  '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="9" height="9"/></svg>',
  '<svg xmlns="http://www.w3.org/2000/svg"><script>window.__pwned=1</script><rect width="9" height="9"/></svg>',
  '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="alert(1)"/></body></foreignObject><rect width="9" height="9"/></svg>',
  '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><a xlink:href="javascript:alert(1)"><rect width="9" height="9"/></a></svg>',
  '<svg xmlns="http://www.w3.org/2000/svg"><set attributeName="onmouseover" to="alert(1)"/><animate attributeName="href" values="javascript:alert(1)"/><rect width="9" height="9"/></svg>',
  '<svg xmlns="http://www.w3.org/2000/svg"><rect width="9" height="9" fill="u\\rl(https://evil.example/a)" filter="\\75 rl(https://evil.example/b)" mask="image-set(\'https://evil.example/c\' 1x)"/></svg>',
];
