/** Where a label's releases live in storage, and the names its pointer may hold. */
export const releaseKeys = {
  folder: (productId: string, label: string) => `${productId}/releases/${label}`,
  tree: (productId: string, label: string, n: number) => `${productId}/releases/${label}/${n}`,
  pointer: (productId: string, label: string) => `${productId}/releases/${label}/current`,
};

/** The number a pointer names, or null (no pointer, or not a number: never served). */
export function releaseNumberOf(target: string | null): number | null {
  if (target === null || !/^[1-9][0-9]{0,8}$/.test(target)) return null;
  return Number(target);
}
