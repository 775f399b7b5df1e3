import type { StoredEntry } from '../../infra/storage.js';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** A plain listing of an update-site folder, as Apache/nginx autoindex print it (browsers, wget -r). */
export function folderIndex(title: string, entries: StoredEntry[]): string {
  const rows = entries.map((e) => {
    const name = e.type === 'dir' ? `${e.name}/` : e.name;
    const size = e.type === 'dir' ? '-' : String(e.size);
    const when = new Date(e.mtimeMs).toISOString().replace('T', ' ').slice(0, 16);
    return `<tr><td><a href="${escapeHtml(encodeURIComponent(e.name))}${e.type === 'dir' ? '/' : ''}">${escapeHtml(name)}</a></td><td>${when}</td><td align="right">${size}</td></tr>`;
  });
  const t = escapeHtml(title);
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Index of ${t}</title></head>
<body><h1>Index of ${t}</h1>
<table><thead><tr><th align="left">Name</th><th align="left">Modified (UTC)</th><th align="right">Size</th></tr></thead><tbody>
<tr><td><a href="../">../</a></td><td></td><td></td></tr>
${rows.join('\n')}
</tbody></table></body></html>
`;
}
