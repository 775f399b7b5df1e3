/**
 * What was uploaded, as pages read it: a product's labels and workflows grow with its files
 * (a label may hold tens of thousands), so they are read once per change of the product's files
 * (the files' change stamp, moved by every upload, replacement, removal and rename, by any
 * process) and kept, not re-read whenever the page is rebuilt for an edit of its text.
 */
import type { FileEntry, LabelSummary, ProductFilesReader } from '../files/reader.js';

export function stampedFiles(files: ProductFilesReader, cacheSize = 500): ProductFilesReader {
  const kept = new Map<string, { stamp: string | null; value: unknown }>();

  async function read<T>(key: string, productId: string, fresh: () => Promise<T>): Promise<T> {
    // Read before the list: a change racing it can only make the kept list look older than it is.
    const stamp = await files.changeStamp(productId);
    const hit = kept.get(key);
    if (hit && hit.stamp === stamp) return hit.value as T;
    const value = await fresh();
    kept.delete(key);
    kept.set(key, { stamp, value });
    if (kept.size > cacheSize) kept.delete(kept.keys().next().value as string);
    return value;
  }

  return {
    listLabels: (productId) => read<LabelSummary[]>(`labels\u0000${productId}`, productId, () => files.listLabels(productId)),
    listFiles: (productId, area) => read<FileEntry[]>(`${area}\u0000${productId}`, productId, () => files.listFiles(productId, area)),
    changeStamp: (productId) => files.changeStamp(productId),
  };
}
