/**
 * The branch or tag a binding accepts, always as a full Git ref: `refs/heads/<branch>` or
 * `refs/tags/<tag>`. A branch and a tag may share a name (a tag `main` beside the branch
 * `main`), and anyone who may push a tag can create one, so a bound ref names its kind: a bare
 * name is a branch (what bindings made before refs had a kind meant), a tag is bound as
 * `refs/tags/<tag>`. `*` in the name matches any run of characters (`refs/tags/v*`); Git refuses
 * `*` in ref names (git-check-ref-format), so it can only be a wildcard here.
 */
import type { CiIdentity } from './claims.js';

export const BRANCH_PREFIX = 'refs/heads/';
export const TAG_PREFIX = 'refs/tags/';

/** A ref name's characters: no control characters, spaces or what git-check-ref-format refuses (`*` is our wildcard). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
const NAME = /^[^\x00-\x20\x7f~^:?[\\]{1,255}$/;

/** Why `ref` cannot be bound, or null. Takes a bare branch name or a full `refs/heads/…`/`refs/tags/…` ref. */
export function refProblem(ref: string): string | null {
  const name = ref.startsWith(BRANCH_PREFIX) ? ref.slice(BRANCH_PREFIX.length) : ref.startsWith(TAG_PREFIX) ? ref.slice(TAG_PREFIX.length) : ref;
  if (name === ref && ref.startsWith('refs/')) return 'must be a branch name, refs/heads/<branch> or refs/tags/<tag>';
  if (!NAME.test(name) || name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'must be a branch or tag name (no spaces or control characters)';
  return null;
}

/** The full ref a binding's `ref` stands for: a bare name is a branch. */
export function boundRef(ref: string): string {
  return ref.startsWith(BRANCH_PREFIX) || ref.startsWith(TAG_PREFIX) ? ref : `${BRANCH_PREFIX}${ref}`;
}

/**
 * The full ref the CI job runs for. GitHub's `ref` claim is one already (`refs/heads/main`,
 * `refs/tags/v1`, `refs/pull/7/merge`); GitLab's is a bare name whose kind is `ref_type`
 * (`branch` or `tag`), so without a known `ref_type` there is no ref to compare: null.
 */
export function identityRef(identity: Pick<CiIdentity, 'provider' | 'ref' | 'refType'>): string | null {
  if (identity.provider === 'github') return identity.ref;
  if (identity.refType === 'branch') return `${BRANCH_PREFIX}${identity.ref}`;
  if (identity.refType === 'tag') return `${TAG_PREFIX}${identity.ref}`;
  return null;
}

/**
 * Whether the full ref `actual` matches the bound `pattern`, where each `*` matches any run of
 * characters (slashes included). Linear: the pieces between wildcards are found left to right,
 * each at its first place after the previous (the leftmost match never loses one).
 */
export function refMatches(pattern: string, actual: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return pattern === actual;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (actual.length < first.length + last.length || !actual.startsWith(first) || !actual.endsWith(last)) return false;
  let at = first.length;
  const end = actual.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const found = actual.indexOf(piece, at);
    if (found < 0 || found + piece.length > end) return false;
    at = found + piece.length;
  }
  return true;
}
