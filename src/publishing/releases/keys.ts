/** Where a label's releases live in storage, and the names its pointer may hold. */
export const releaseKeys = {
  folder: (productId: string, label: string) => `${productId}/releases/${label}`,
  tree: (productId: string, label: string, n: number) => `${productId}/releases/${label}/${n}`,
  /** Where a copy is crawled before it is accepted: no release address names it. */
  candidate: (productId: string, label: string, n: number, secret: string) => `${productId}/releases/${label}/${candidatePrefix(n)}${secret}`,
  pointer: (productId: string, label: string) => `${productId}/releases/${label}/current`,
};

/** The start of the folder names of copy `n` while it is a candidate. */
export const candidatePrefix = (n: number) => `candidate-${n}-`;

/** The secret of a candidate's address: 128 random bits, base64url. */
export const CANDIDATE_SECRET = /^[A-Za-z0-9_-]{22}$/;

/** The number of a candidate folder's copy (`candidate-<n>-<secret>`), or null for any other name. */
export function candidateNumberOf(name: string): number | null {
  const m = /^candidate-([1-9][0-9]{0,8})-([A-Za-z0-9_-]{22})$/.exec(name);
  return m ? Number(m[1]) : null;
}

/**
 * The download-host path segment of a candidate (`<label>@<n>~<secret>`): only the crawl that
 * made the copy knows it, so users never reach a copy that was not accepted.
 */
export const candidateSegment = (c: { label: string; number: number; secret: string }) => `${c.label}@${c.number}~${c.secret}`;

/** The number a pointer names, or null (no pointer, or not a number: never served). */
export function releaseNumberOf(target: string | null): number | null {
  if (target === null || !/^[1-9][0-9]{0,8}$/.test(target)) return null;
  return Number(target);
}
