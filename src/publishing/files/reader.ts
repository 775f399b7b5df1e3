import type { FilesRepository, LabelTotalsRow } from './repository.js';
import { isLabel } from './tree.js';

export interface LabelSummary {
  label: string;
  /** Files and bytes of the folder `update-site/<label>/` (the archive is counted apart). */
  files: number;
  bytes: number;
  hasArchive: boolean;
  lastUploadAt: string | null;
  /** Size of `update-site/<label>.zip`, 0 without one. */
  archiveBytes: number;
}

export interface FileEntry {
  path: string;
  size: number;
  modifiedAt: string;
}

export interface ProductFilesReader {
  /** Update-site labels of the product (folder `update-site/<label>/` and/or archive `update-site/<label>.zip`), sorted by label. */
  listLabels(productId: string): Promise<LabelSummary[]>;
  /** Files under `assets/` or `workflows/`, paths relative to that folder, sorted; with `limit`, the first ones. */
  listFiles(productId: string, area: 'assets' | 'workflows', limit?: number): Promise<FileEntry[]>;
  /** How many files are under `assets/` or `workflows/`. */
  countFiles(productId: string, area: 'assets' | 'workflows'): Promise<number>;
  /** Changes whenever any file of the product is added, replaced or removed (also by another process/instance); null if none yet. */
  changeStamp(productId: string): Promise<string | null>;
}

/** Code-unit order, the same on every database and locale. */
const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Reads what was uploaded from the record of finished uploads (one query per call, shared by
 * every instance through the database), never by walking the storage folder.
 */
export function productFilesReader(
  repo: FilesRepository,
  /** Where the label totals are read (the catalog worker's thread on SQLite); the repository by default. */
  read: { labelTotals?: (productId: string) => Promise<LabelTotalsRow[]> } = {},
): ProductFilesReader {
  const labelTotals = read.labelTotals ?? ((productId: string) => repo.labelTotals(productId));
  return {
    async listLabels(productId) {
      const labels = new Map<string, LabelSummary>();
      // Summed by the database, a row per label: a label may hold 100,000 files.
      for (const row of await labelTotals(productId)) {
        if (!isLabel(row.label)) continue;
        let s = labels.get(row.label);
        if (!s) {
          s = { label: row.label, files: 0, bytes: 0, hasArchive: false, lastUploadAt: null, archiveBytes: 0 };
          labels.set(row.label, s);
        }
        if (row.archive) {
          s.hasArchive = true;
          s.archiveBytes = row.bytes;
        } else {
          s.files = row.files;
          s.bytes = row.bytes;
        }
        if (row.lastUploadAt !== null && (s.lastUploadAt === null || row.lastUploadAt > s.lastUploadAt)) s.lastUploadAt = row.lastUploadAt;
      }
      return [...labels.values()].sort((a, b) => byString(a.label, b.label));
    },

    async listFiles(productId, area, limit) {
      const prefix = `${area}/`;
      return (await repo.listUnder(productId, prefix, limit))
        .map((r) => ({ path: r.path.slice(prefix.length), size: r.size, modifiedAt: r.modified_at }))
        .sort((a, b) => byString(a.path, b.path));
    },

    countFiles: (productId, area) => repo.countUnder(productId, `${area}/`),

    async changeStamp(productId) {
      const state = await repo.state(productId);
      return state && state.change_seq > 0 ? String(state.change_seq) : null;
    },
  };
}
