/** A category path the platform declares (`/community`) and its name in the node repository. */
export interface PlatformCategory {
  path: string;
  name: string;
}

/**
 * The top-level node categories of KNIME Analytics Platform, as org.knime.base declares them
 * (extension point org.knime.workbench.repository.categories, `path="/"`). Extensions place
 * their nodes under these (`/community/<vendor>`) without declaring them again.
 */
export const KNIME_CATEGORIES: readonly PlatformCategory[] = [
  { path: '/io', name: 'IO' },
  { path: '/manipulation', name: 'Manipulation' },
  { path: '/view', name: 'Views' },
  { path: '/analytics', name: 'Analytics' },
  { path: '/db', name: 'DB' },
  { path: '/scripting', name: 'Scripting' },
  { path: '/toolintegration', name: 'Tools & Services' },
  { path: '/flowcontrol', name: 'Workflow Control' },
  { path: '/flowabstraction', name: 'Workflow Abstraction' },
  { path: '/labs', name: 'KNIME Labs' },
  { path: '/community', name: 'Community Nodes' },
  { path: '/misc', name: 'Misc' },
  { path: '/social-media', name: 'Social Media' },
  { path: '/report', name: 'Reporting' },
  { path: '/chemistry', name: 'Chemistry' },
  { path: '/applications', name: 'Other Data Types' },
  { path: '/struct-data', name: 'Structured Data' },
  { path: '/uncategorized', name: 'Uncategorized' },
];

/**
 * PIER_PLATFORM_CATEGORIES: comma-separated category paths, each optionally `=Name`
 * (`/community=Community Nodes,/io`); a path without a name is named by its last segment.
 * Empty or unset: KNIME's top-level categories; `none`: no platform categories.
 */
export function parsePlatformCategories(raw: string | undefined): { categories: PlatformCategory[] } | { error: string } {
  if (raw === undefined || raw.trim() === '') return { categories: KNIME_CATEGORIES.map((c) => ({ ...c })) };
  if (raw.trim() === 'none') return { categories: [] };
  const entries = raw.split(',').map((x) => x.trim()).filter(Boolean);
  if (entries.length > 1000) return { error: 'at most 1000 categories' };
  const out: PlatformCategory[] = [];
  for (const e of entries) {
    const eq = e.indexOf('=');
    const at = (eq < 0 ? e : e.slice(0, eq)).trim();
    const label = eq < 0 ? '' : e.slice(eq + 1).trim();
    // Category ids as plugin.xml writes them (level-id): no spaces, slashes only between segments.
    if (!/^(?:\/[A-Za-z0-9_.+-]{1,100}){1,16}$/.test(at)) {
      return { error: `"${at}" is not a category path such as /community or /io/read (segments of letters, digits, ".", "_", "+", "-")` };
    }
    if (label.length > 200 || /\p{Cc}/u.test(label)) return { error: `the name of ${at} must be at most 200 characters without control characters` };
    out.push({ path: at, name: label || (at.split('/').pop() as string) });
  }
  return { categories: out };
}

