import type { StoredEntry } from '../../infra/storage.js';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/**
 * Entries on one page of a folder's index: a request stats and renders at most this many, so
 * an anonymous GET of a folder of any size is a bounded piece of work (folder-pages.ts).
 */
export const FOLDER_PAGE_ENTRIES = 500;

/** The `page` of `?page=N` (1 when absent); null when it is not a page number. */
export function folderPageOf(query: string): number | null {
  const m = /(?:^|&)page=([^&]*)/.exec(query);
  if (!m) return 1;
  return /^[1-9]\d{0,8}$/.test(m[1] as string) ? Number(m[1]) : null;
}

/**
 * A plain listing of an update-site folder, as Apache/nginx autoindex print it (browsers,
 * wget -r), one page of FOLDER_PAGE_ENTRIES entries at a time with links to the others. A
 * subfolder shows no time: its own changes (an entry added inside it) do not change this
 * folder, by which the page is cached (folder-pages.ts).
 */
export function folderIndex(title: string, entries: StoredEntry[], paging: { page: number; pages: number } = { page: 1, pages: 1 }): string {
  const rows = entries.map((e) => {
    const name = e.type === 'dir' ? `${e.name}/` : e.name;
    const size = e.type === 'dir' ? '-' : String(e.size);
    const when = e.type === 'dir' ? '-' : new Date(e.mtimeMs).toISOString().replace('T', ' ').slice(0, 16);
    return `<tr><td><a href="${escapeHtml(encodeURIComponent(e.name))}${e.type === 'dir' ? '/' : ''}">${escapeHtml(name)}</a></td><td>${when}</td><td align="right">${size}</td></tr>`;
  });
  const t = escapeHtml(title);
  const { page, pages } = paging;
  const nav =
    pages > 1
      ? `<p>Page ${page} of ${pages}${page > 1 ? ` <a rel="prev" href="?page=${page - 1}">previous</a>` : ''}${page < pages ? ` <a rel="next" href="?page=${page + 1}">next</a>` : ''}</p>\n`
      : '';
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Index of ${t}</title></head>
<body><h1>Index of ${t}</h1>
${nav}<table><thead><tr><th align="left">Name</th><th align="left">Modified (UTC)</th><th align="right">Size</th></tr></thead><tbody>
<tr><td><a href="../">../</a></td><td></td><td></td></tr>
${rows.join('\n')}
</tbody></table>
${nav}</body></html>
`;
}
