/**
 * The label a CI run publishes to, taken from the tag or branch it runs for.
 *
 * Spec "Versioning" 1: a label is by convention the target platform release (major.minor),
 * because an extension's compatibility is pinned to a platform version; a semantic version is
 * also accepted. So a release tag `v5.3.1` publishes to `5.3`: every patch release of the 5.3
 * line replaces the update site that 5.3 users already have configured, and its URL never
 * changes. A pre-release (`v5.3.0-rc.1`) gets a label of its own (`5.3.0-rc.1`) and never
 * replaces the stable site. Anything else (a branch called `main`) has no label: the run must
 * say which one (the `PIER_LABEL` variable), rather than guess and overwrite a live site.
 */
import { isLabel } from '../../publishing/files/tree.js';

/** Why a ref gives no label; the message names the ways to set one. */
export class NoLabelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoLabelError';
  }
}

const RELEASE = /^(\d+)\.(\d+)(?:\.\d+)*$/;
const PRE_RELEASE = /^(\d+\.\d+(?:\.\d+)*)-([0-9A-Za-z.-]+)$/;

/** `05` and `5` are the same release: numbers without leading zeros. */
function number(digits: string): string {
  return digits.replace(/^0+(?=\d)/, '');
}

/**
 * The label for a ref: `refs/tags/v5.3.1`, `v5.3.1`, `release/5.3` → `5.3`;
 * `v5.3.0-rc.1` → `5.3.0-rc.1`; a version's build metadata (`+build.7`) is dropped, since it
 * does not make a different release. Null when the ref names no version.
 */
export function labelFromRef(ref: string): string | null {
  const name = ref.replace(/^refs\/(?:tags|heads)\//, '');
  // The last path segment: `release/5.3`, `releases/v5.3.1` (GitLab and GitHub branch names).
  const segment = name.slice(name.lastIndexOf('/') + 1);
  const version = segment.replace(/^[vV]/, '').replace(/\+[0-9A-Za-z.-]*$/, '');
  const release = RELEASE.exec(version);
  if (release) {
    const label = `${number(release[1]!)}.${number(release[2]!)}`;
    return isLabel(label) ? label : null;
  }
  const pre = PRE_RELEASE.exec(version);
  if (pre) {
    const label = `${pre[1]!.split('.').map(number).join('.')}-${pre[2]}`;
    return isLabel(label) ? label : null;
  }
  return null;
}

/**
 * The label of this CI run, from its environment: `PIER_LABEL` when set (a workflow input, a
 * repository or project variable), else the tag or branch: GitHub Actions' `GITHUB_REF_NAME`,
 * GitLab CI's `CI_COMMIT_TAG` or `CI_COMMIT_REF_NAME`, or `--ref`.
 */
export function labelFromEnv(env: NodeJS.ProcessEnv, ref?: string): string {
  const explicit = env.PIER_LABEL?.trim();
  if (explicit) {
    if (!isLabel(explicit)) throw new NoLabelError(`PIER_LABEL "${explicit}" is not a valid label (one path segment of letters, digits, ".", "_", "-")`);
    return explicit;
  }
  const from = ref ?? (env.GITHUB_REF_NAME || env.CI_COMMIT_TAG || env.CI_COMMIT_REF_NAME);
  if (!from) throw new NoLabelError('no tag or branch to take the label from (GITHUB_REF_NAME, CI_COMMIT_TAG, CI_COMMIT_REF_NAME are unset): set PIER_LABEL');
  const label = labelFromRef(from);
  if (!label) {
    throw new NoLabelError(
      `"${from}" names no version to take the label from (expected a tag like v5.3.1 → 5.3, or a branch like release/5.3): set PIER_LABEL to the label to publish`,
    );
  }
  return label;
}
