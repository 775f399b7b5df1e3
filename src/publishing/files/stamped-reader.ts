/**
 * What was uploaded, as pages, crawls, releases and notices read it: a product's labels and
 * workflows grow with its files (a label may hold tens of thousands, and its totals are a
 * grouped read of every row), so they are read once per change of the product's files (the
 * files' change stamp, moved by every upload, replacement, removal and rename, by any process)
 * and kept; readers asking while one read is under way share it. The lists handed out are
 * shared: callers only read them.
 */
import type { FileEntry, LabelSummary, ProductFilesReader } from './reader.js';

export function stampedFiles(files: ProductFilesReader, cacheSize = 500): ProductFilesReader {
  const kept = new Map<string, { stamp: string | null; value: unknown }>();
  const reading = new Map<string, Promise<unknown>>();

  async function read<T>(key: string, productId: string, fresh: () => Promise<T>): Promise<T> {
    // Read before the list: a change racing it can only make the kept list look older than it is.
    const stamp = await files.changeStamp(productId);
    const hit = kept.get(key);
    if (hit && hit.stamp === stamp) return hit.value as T;
    const readKey = `${key}\u0000${stamp}`;
    const same = reading.get(readKey);
    if (same) return same as Promise<T>;
    const mine = fresh().then((value) => {
      kept.delete(key);
      kept.set(key, { stamp, value });
      if (kept.size > cacheSize) kept.delete(kept.keys().next().value as string);
      return value;
    });
    reading.set(readKey, mine);
    void mine.catch(() => {}).then(() => reading.delete(readKey));
    return mine;
  }

  return {
    listLabels: (productId) => read<LabelSummary[]>(`labels\u0000${productId}`, productId, () => files.listLabels(productId)),
    listFiles: (productId, area, limit) => read<FileEntry[]>(`${area}\u0000${limit ?? ''}\u0000${productId}`, productId, () => files.listFiles(productId, area, limit)),
    countFiles: (productId, area) => read<number>(`${area}\u0000count\u0000${productId}`, productId, () => files.countFiles(productId, area)),
    changeStamp: (productId) => files.changeStamp(productId),
  };
}
