/**
 * What changed between two labels of a product, or between a label and one of its kept
 * releases (docs/vendors.md#what-changed-between-labels). A side is named `<label>` (the nodes
 * of the label's latest crawl, what its update site offers now) or `<label>@<n>` (the node
 * snapshot kept for release n, which must be kept and released). Defaults: `to` is the
 * recommended label (the one named like the current platform release, else the highest, as on
 * the product page); `from` is the release of `to` before it, else the next lower label.
 */
import { withdrawnInFields } from '../notices/notices.js';
import { AppError, ValidationError } from '../../infra/errors.js';
import type { ProductFilesReader } from '../files/reader.js';
import { isLabel } from '../files/tree.js';
import { MAX_LABEL_LENGTH } from '../model/label-limit.js';
import type { ProductsRepository } from '../products/repository.js';
import { type ComparisonPage, localDiffer, type NodesDiffer } from './compare.js';
import type { ReleaseNodesRepository } from './repository.js';

/** One side of a comparison. */
export interface Side {
  label: string;
  /** The release's number; null: the label as crawled now. */
  release: number | null;
  /** How it is written in `from`/`to`: `5.4` or `5.4@2`. */
  value: string;
}

/** One page of a comparison (changes/compare.ts): `diff` holds the page's nodes, `counts` every bucket's size. */
export interface Comparison extends ComparisonPage {
  from: Side;
  to: Side;
}

/** What can be compared: every label (best first) and its kept releases (newest first). */
export interface ChangeSources {
  labels: {
    label: string;
    /** Its update-site folder holds files (it was crawled); false: only kept releases are left of it. */
    uploaded: boolean;
    recommended: boolean;
    current: number | null;
    releases: number[];
  }[];
}

/** The value names no label or release of the product (404, naming the parameter). */
export class UnknownSideError extends AppError {
  constructor(field: 'from' | 'to', detail: string) {
    super(404, 'not_found', 'Not found', detail, [{ field, message: detail }]);
    this.name = 'UnknownSideError';
  }
}

/** Longest `from`/`to` value: a label, `@`, a release number of up to 9 digits. */
export const MAX_SIDE_LENGTH = MAX_LABEL_LENGTH + 10;
const SIDE = /^([^@]+)(?:@([1-9][0-9]{0,8}))?$/;

/** Parses `<label>` or `<label>@<n>`; anything else is a 400 naming the parameter. */
export function parseSide(field: 'from' | 'to', value: string): { label: string; release: number | null } {
  const m = value.length <= MAX_SIDE_LENGTH ? SIDE.exec(value) : null;
  if (!m || !isLabel(m[1] as string)) {
    const message = 'expected a label (letters, digits, ".", "_", "-") or <label>@<release number>';
    throw new ValidationError(`${field}: ${message}`, [{ field, message }]);
  }
  return { label: m[1] as string, release: m[2] === undefined ? null : Number(m[2]) };
}

/** Numeric-aware descending order ("5.10" above "5.9"), as the product page orders labels. */
const labelsDesc = (a: string, b: string) => b.localeCompare(a, 'en', { numeric: true });

export interface ChangesServiceDeps {
  snapshots: ReleaseNodesRepository;
  files: Pick<ProductFilesReader, 'listLabels'>;
  products: Pick<ProductsRepository, 'getSetting' | 'find'>;
  /** The label's current release (releases/service.ts `current`); absent: labels have none. */
  current?: (productId: string, label: string) => number | null;
  /** Where the sides are read and compared (web/catalog-reads.ts: off the serving loop); default: here. */
  differ?: NodesDiffer;
}

/** A `page` of a comparison past its last (404 naming the parameter). */
export class UnknownPageError extends AppError {
  constructor(pages: number) {
    const detail = `the comparison has ${pages} page${pages === 1 ? '' : 's'}`;
    super(404, 'not_found', 'Not found', detail, [{ field: 'page', message: detail }]);
    this.name = 'UnknownPageError';
  }
}

export function changesService({ snapshots, files, products, current = () => null, differ = localDiffer(snapshots) }: ChangesServiceDeps) {
  async function sources(productId: string): Promise<ChangeSources> {
    const [uploaded, kept, release, row] = await Promise.all([
      files.listLabels(productId),
      snapshots.list(productId),
      products.getSetting('platform_release'),
      products.find(productId),
    ]);
    // Labels with an update-site folder (the ones crawled); a label whose folder is gone still
    // offers the releases kept of it. A withdrawn label is offered nowhere (its URL is gone).
    const withdrawn = row ? withdrawnInFields(row.fields) : new Map<string, string | null>();
    const live = uploaded.filter((l) => l.files > 0 && !withdrawn.has(l.label)).map((l) => l.label).sort(labelsDesc);
    const sorted = [...new Set([...live, ...kept.map((k) => k.label)])].filter((l) => !withdrawn.has(l)).sort(labelsDesc);
    // As the product page recommends (web/presenter.ts installLabels): the label named like the
    // current platform release, else the highest.
    const recommended = release !== undefined && live.includes(release) ? release : (live[0] ?? null);
    const labels = sorted.map((label) => ({
      label,
      uploaded: live.includes(label),
      recommended: label === recommended,
      current: current(productId, label),
      releases: kept.filter((k) => k.label === label).map((k) => k.number),
    }));
    return { labels: [...labels.filter((l) => l.recommended), ...labels.filter((l) => !l.recommended)] };
  }

  /** A side named by a value: a label that is uploaded now, or a kept release of a label; else a 404 naming the parameter. */
  function known(field: 'from' | 'to', side: { label: string; release: number | null }, src: ChangeSources): void {
    const l = src.labels.find((x) => x.label === side.label);
    if (side.release === null) {
      if (!l?.uploaded) throw new UnknownSideError(field, `the product has no label "${side.label}"`);
    } else if (!l?.releases.includes(side.release)) {
      throw new UnknownSideError(field, `label "${side.label}" has no kept release ${side.release} (kept: ${l?.releases.join(', ') || 'none'})`);
    }
  }

  /** The default `from` for `to`: its release before, else the next lower label; null: none. */
  function earlier(to: { label: string; release: number | null }, src: ChangeSources): { label: string; release: number | null } | null {
    const l = src.labels.find((x) => x.label === to.label);
    const before = to.release ?? l?.current ?? null;
    const previous = before === null ? undefined : l?.releases.find((n) => n < before);
    if (previous !== undefined) return { label: to.label, release: previous };
    const lower = src.labels
      .filter((x) => x.uploaded && labelsDesc(x.label, to.label) > 0)
      .map((x) => x.label)
      .sort(labelsDesc)[0];
    return lower === undefined ? null : { label: lower, release: null };
  }

  const value = (s: { label: string; release: number | null }): Side => ({ ...s, value: s.release === null ? s.label : `${s.label}@${s.release}` });

  return {
    sources,

    /**
     * Compares `from` with `to` (either may be missing: see the defaults above) and answers page
     * `page` of it (changes/compare.ts). `missing` names the side that has no default (no label
     * at all, or nothing earlier than `to`).
     */
    async compare(
      productId: string,
      query: { from?: string; to?: string },
      page = 1,
      /** The product's crawl stamp read before (see NodesDiffer); without it, nothing is re-used. */
      crawled?: string | null,
    ): Promise<{ sources: ChangeSources } & ({ comparison: Comparison } | { missing: 'from' | 'to' })> {
      // Both are parsed first: a malformed value is a 400 whatever the product holds.
      const askedTo = query.to ? parseSide('to', query.to) : null;
      const askedFrom = query.from ? parseSide('from', query.from) : null;
      const src = await sources(productId);
      const recommended = src.labels.find((l) => l.recommended);
      const to = askedTo ?? (recommended ? { label: recommended.label, release: null } : null);
      if (!to) return { sources: src, missing: 'to' };
      known('to', to, src);
      const from = askedFrom ?? earlier(to, src);
      if (!from) return { sources: src, missing: 'from' };
      known('from', from, src);
      const outcome = await differ.compare(productId, from, to, page, crawled === undefined ? null : JSON.stringify([src, crawled]));
      if (!outcome.ok) {
        if (outcome.missing === 'page') throw new UnknownPageError(outcome.pages ?? 1);
        // Its release was pruned between reading the sources and reading its nodes.
        const side = outcome.missing === 'to' ? to : from;
        throw new UnknownSideError(outcome.missing, `label "${side.label}" has no kept release ${side.release}`);
      }
      return { sources: src, comparison: { from: value(from), to: value(to), ...outcome.page } };
    },

    /** Whether the product has two things to compare: two labels, or a label with an earlier release. */
    async comparable(productId: string): Promise<boolean> {
      const src = await sources(productId);
      return src.labels.filter((l) => l.uploaded).length >= 2 || src.labels.some((l) => l.releases.some((n) => n !== l.current));
    },
  };
}

export type ChangesService = ReturnType<typeof changesService>;
