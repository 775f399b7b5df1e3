// Node descriptions come from vendor jars: the crawler keeps their markup as HTML of a small
// vocabulary (crawler/description-markup.ts), and every page that shows it passes it through this
// allowlist on the way out, so a description stored before a sanitizer fix is still shown safe.
import sanitizeHtml from 'sanitize-html';

const NODE_MARKUP: sanitizeHtml.IOptions = {
  allowedTags: ['p', 'div', 'br', 'ul', 'ol', 'li', 'a', 'b', 'strong', 'i', 'em', 'u', 'code', 'pre', 'sup', 'sub', 'h4', 'h5', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'hr', 'dl', 'dt', 'dd'],
  allowedAttributes: { a: ['href', 'rel'] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'escape',
  transformTags: {
    // Links in a vendor's description are user content: no ranking credit, no window.opener.
    a: (tagName, attribs) => ({ tagName, attribs: { ...attribs, rel: 'nofollow ugc noopener' } }),
  },
};

export function sanitizeNodeMarkup(html: string): string {
  return sanitizeHtml(html, NODE_MARKUP);
}

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * A description stored as plain text (crawls made before descriptions kept their markup, and
 * pure-Python extensions' docstrings): each line a paragraph, as those crawls wrote one per line.
 */
export function plainTextAsHtml(text: string): string {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => `<p>${escapeHtml(l)}</p>`)
    .join('');
}
