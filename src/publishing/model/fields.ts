/**
 * The product field model: the page fields as stored, their names and limits. It stands on the
 * ground floor of publishing, with no import of its own, because every part that stores,
 * validates or renders a page (products/, content/, notices/, web/) reads it.
 */

/** The page fields of a product as stored (spec: "Product (editable through PATCH)"). */
export interface ProductStyle {
  color1?: string;
  color2?: string;
  backgroundImageUrl?: string;
  badgeColor?: string;
}

export interface ProductContact {
  name: string;
  email: string;
}

export interface ProductFields {
  name: string;
  description?: string;
  text?: string;
  changelog?: string;
  license?: string;
  faq?: string;
  contact?: ProductContact;
  style?: ProductStyle;
  instructions?: string;
  icon?: string;
  iconBase64?: string;
  /** Deprecated and withdrawn labels (their rules: notices/notices.ts). */
  labels?: LabelNotices;
}

export type FieldName = keyof ProductFields;

export const FIELD_NAMES: readonly FieldName[] = [
  'name',
  'description',
  'text',
  'changelog',
  'license',
  'faq',
  'contact',
  'style',
  'instructions',
  'icon',
  'iconBase64',
  'labels',
];

export const MARKDOWN_FIELDS = ['text', 'changelog', 'license', 'faq', 'instructions'] as const;

const KiB = 1024;

/**
 * Size limits in UTF-8 bytes, documented in the README. Generous for real pages, small enough
 * that one request cannot fill the disk or stall the renderer.
 */
export const FIELD_LIMITS: Record<FieldName, number> = {
  name: 120,
  description: 300,
  text: 256 * KiB,
  changelog: 512 * KiB,
  license: 128 * KiB,
  faq: 128 * KiB,
  contact: 1 * KiB,
  style: 4 * KiB,
  instructions: 64 * KiB,
  icon: 128 * KiB,
  // Base64 of a raster icon of at most 512 KiB.
  iconBase64: Math.ceil((512 * KiB) / 3) * 4,
  // 200 notices of a 500-character message each, in any script.
  labels: 512 * KiB,
};

export const URL_LIMIT = 2048;

/** Largest PATCH body: every field at its limit would not fit, on purpose. */
export const PATCH_BODY_LIMIT = 2 * 1024 * KiB;

/** A label's notice (docs/vendors.md#deprecating-and-withdrawing-a-label); its rules: notices/notices.ts. */
export type LabelStatus = 'deprecated' | 'withdrawn';

/** A notice as stored in `fields.labels[<label>]`. */
export interface LabelNotice {
  status: LabelStatus;
  /** Plain text, one paragraph. */
  message?: string;
  /** Another label of the same product to use instead. */
  replacement?: string;
  /** When the status last changed (ISO 8601); a new message alone keeps it. */
  since: string;
}

export type LabelNotices = Record<string, LabelNotice>;
