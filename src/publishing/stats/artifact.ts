/**
 * Which downloads count as installs (README "Download counts"), decided from the storage key of
 * the file the download host served: a feature jar directly in a label's `features/` folder (of
 * the uploaded folder or of one of its releases), or the label's archive `<label>.zip`. One
 * install or update fetches each feature it installs once, and metadata (content.jar,
 * artifacts.jar, composite documents) is fetched on every update check, so only those count.
 * The key is built once per cached file (downloads/server.ts `describeFile`), never per request.
 */
import { isLabel } from '../files/tree.js';

/** The artifact name of a label's archive: `#` is in no OSGi symbolic name, so no feature id collides with it. */
export const ARCHIVE = '#archive';

/**
 * A version as p2 spells it in artifact file names: `major.minor.micro` always (p2 writes the
 * normalised three-part form), then an optional `.qualifier` of `[A-Za-z0-9_-]` (OSGi Core R8
 * §3.2.5 "Version").
 */
const VERSION_JAR = /^[0-9]+\.[0-9]+\.[0-9]+(?:\.[A-Za-z0-9_-]+)?\.jar$/;
/** An OSGi symbolic name: dot-separated tokens of `[A-Za-z0-9_-]` (OSGi Core R8 §1.3.2 "token"). */
const SYMBOLIC_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

/**
 * The feature id of a p2 feature artifact file name `<id>_<version>.jar` (p2's simple artifact
 * repository layout, `features/${id}_${version}.jar`), or null when the name is not one.
 * An id may contain `_` itself: the id ends at the first `_` after which a whole version and
 * `.jar` follow (an id whose dot-separated tokens start with a letter, as real ids do, cannot
 * contain that, so the split is unambiguous for them).
 */
export function featureIdOf(fileName: string): string | null {
  for (let at = fileName.indexOf('_'); at > 0; at = fileName.indexOf('_', at + 1)) {
    if (VERSION_JAR.test(fileName.slice(at + 1))) {
      const id = fileName.slice(0, at);
      return SYMBOLIC_NAME.test(id) ? id : null;
    }
  }
  return null;
}

/** Product, label and artifact joined by NUL (which no product id, label or file name holds). */
export function countKey(productId: string, label: string, artifact: string): string {
  return `${productId}\u0000${label}\u0000${artifact}`;
}

export function splitCountKey(key: string): { productId: string; label: string; artifact: string } {
  const [productId = '', label = '', artifact = ''] = key.split('\u0000');
  return { productId, label, artifact };
}

/**
 * The count key of a served file by its storage key (downloads/paths.ts), or null when its
 * downloads do not count:
 *   <product>/update-site/<label>/features/<id>_<version>.jar      → (product, label, id)
 *   <product>/releases/<label>/<n>/features/<id>_<version>.jar     → (product, label, id)
 *   <product>/update-site/<label>.zip                              → (product, label, ARCHIVE)
 */
export function countKeyOf(storageKey: string): string | null {
  const s = storageKey.split('/');
  const [product, area] = s;
  if (product === undefined) return null;
  if (area === 'update-site' && s.length === 3) {
    const file = s[2] as string;
    const label = file.endsWith('.zip') ? file.slice(0, -4) : '';
    return isLabel(label) ? countKey(product, label, ARCHIVE) : null;
  }
  const inLabel = area === 'update-site' && s.length === 5 ? 3 : area === 'releases' && s.length === 6 ? 4 : -1;
  if (inLabel < 0 || s[inLabel] !== 'features') return null;
  const label = s[2] as string;
  const id = featureIdOf(s[inLabel + 1] as string);
  return id !== null && isLabel(label) ? countKey(product, label, id) : null;
}
