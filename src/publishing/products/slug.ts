/**
 * Product IDs address pages (`/product/<id>`), download paths (`/<id>/<label>`) and SFTP users,
 * so names that the site or the download host use for themselves are reserved.
 */
export const RESERVED_IDS: ReadonlySet<string> = new Set([
  'api',
  'assets',
  'workflows',
  'product',
  'products',
  'nodes',
  'node',
  'static',
  'catalog',
  'search',
  'feeds',
  'feed',
  'badge',
  'badges',
  'healthz',
  'readyz',
  'admin',
  'staff',
  'login',
  'logout',
  'docs',
  'update-site',
  'well-known',
  'favicon-ico',
  'robots-txt',
  'sitemap-xml',
  'root',
]);

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** Null when `id` is a usable product ID, else the reason it is not. */
export function productIdProblem(id: string): string | null {
  if (id.length < 2 || id.length > 64) return 'must be 2 to 64 characters long';
  if (!SLUG.test(id)) {
    return 'must be lowercase letters, digits and single inner hyphens (e.g. "my-extension")';
  }
  if (RESERVED_IDS.has(id)) return `"${id}" is reserved by the site; choose another ID`;
  return null;
}
