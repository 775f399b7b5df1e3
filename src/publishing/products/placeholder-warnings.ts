import type { FieldProblem } from '../../infra/errors.js';
import { PLATFORM_RELEASE_PLACEHOLDER } from '../content/placeholder.js';
import { MARKDOWN_FIELDS, type ProductFields } from '../model/fields.js';

/**
 * While no platform release is set (`pier staff set-release`), `{{platformRelease}}` shows
 * literally on the page: one warning per Markdown field that holds it, with its first line.
 */
export function placeholderWarnings(fields: Partial<ProductFields>, release: string | null): FieldProblem[] {
  if (release !== null) return [];
  const warnings: FieldProblem[] = [];
  for (const field of MARKDOWN_FIELDS) {
    const value = fields[field];
    const at = typeof value === 'string' ? value.indexOf(PLATFORM_RELEASE_PLACEHOLDER) : -1;
    if (at < 0 || value === undefined) continue;
    warnings.push({
      field,
      line: value.slice(0, at).split('\n').length,
      message: `${PLATFORM_RELEASE_PLACEHOLDER} shows as written until staff set the platform release (npx pier staff set-release <version>)`,
    });
  }
  return warnings;
}
