import { Type, type Static, type TSchema } from 'typebox';

/** JSON Schema `type: [T, "null"]`: ajv reports "must be string,null" instead of anyOf noise. */
function nullable<T extends TSchema>(schema: T) {
  const json = schema as unknown as Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({ ...json, type: [json.type, 'null'] });
}

const text = (description: string) => Type.Optional(nullable(Type.String({ description })));

export const StyleSchema = Type.Object(
  {
    color1: Type.Optional(Type.String({ description: 'Start of the card and header gradient, #rgb or #rrggbb' })),
    color2: Type.Optional(Type.String({ description: 'End of the gradient, #rgb or #rrggbb' })),
    backgroundImageUrl: Type.Optional(
      Type.String({ description: 'Absolute http(s) URL; overrides the gradient. Empty string removes it' }),
    ),
    badgeColor: Type.Optional(Type.String({ description: 'Badge color; falls back to color1. Empty string removes it' })),
  },
  { additionalProperties: false },
);

/** One label's notice in a PATCH; `null` or `""` instead removes it (notices/notices.ts). */
const LabelNoticeValue = Type.Unsafe<{ status: 'deprecated' | 'withdrawn'; message?: string | null; replacement?: string | null } | null | ''>({
  // One schema for the three forms, so a wrong value gets one message rather than anyOf noise:
  // `properties` apply to objects, `maxLength` to strings (only "" is a string it takes).
  type: ['object', 'null', 'string'],
  maxLength: 0,
  properties: {
    status: { type: 'string', enum: ['deprecated', 'withdrawn'], description: 'deprecated: still offered, with a banner; withdrawn: no longer offered, its URLs answer 410 Gone' },
    message: { type: ['string', 'null'], description: 'Plain text, one paragraph, at most 500 characters' },
    replacement: { type: ['string', 'null'], description: 'Another uploaded label of this product to use instead (not withdrawn)' },
  },
  required: ['status'],
  additionalProperties: false,
});

/** `labels`: notices by label name (docs/vendors.md#deprecating-and-withdrawing-a-label). */
export const LabelsPatchSchema = Type.Unsafe<Record<string, Static<typeof LabelNoticeValue>> | null>({
  type: ['object', 'null'],
  additionalProperties: LabelNoticeValue,
  description:
    'Deprecate or withdraw labels: only the labels sent change; `null` or `""` removes a label\'s notice, `"labels": null` removes ' +
    'all. A label and its replacement must be uploaded; a replacement is never withdrawn, nor leads back in a circle. At most 200 ' +
    'labels have a notice. Withdrawn labels leave the product page and their download URLs answer 410 (within about a second); ' +
    'their files are kept, so removing the notice undoes it. The service stamps `since` when a status changes.',
  examples: [
    {
      '5.1': { status: 'deprecated', message: 'Use 5.2: it fixes the Excel reader on large sheets.', replacement: '5.2' },
      '4.7': { status: 'withdrawn', replacement: '5.2' },
      '4.6': null,
    },
  ],
});

/** A stored notice, as GET shows it inside `fields.labels`. */
export const LabelNoticeSchema = Type.Object(
  {
    status: Type.Unsafe<'deprecated' | 'withdrawn'>({ type: 'string', enum: ['deprecated', 'withdrawn'] }),
    message: Type.Optional(Type.String()),
    replacement: Type.Optional(Type.String()),
    since: Type.String({ format: 'date-time', description: 'when the status last changed' }),
  },
  { additionalProperties: false },
);

export const ContactSchema = Type.Object(
  { name: Type.String(), email: Type.String() },
  { additionalProperties: false },
);

/** The PATCH body: only the fields to change (spec "PATCH semantics"). */
export const ProductPatchSchema = Type.Object(
  {
    name: Type.Optional(nullable(Type.String({ description: 'Product title; can never be empty' }))),
    description: text('Tagline shown in listings and search'),
    text: text('Full page body (Markdown)'),
    changelog: text('Keep a Changelog Markdown'),
    license: text('License terms (Markdown)'),
    faq: text('Questions (## headings) and answers (Markdown)'),
    contact: Type.Optional(nullable(ContactSchema)),
    style: Type.Optional(nullable(StyleSchema)),
    instructions: text('Post-install setup (Markdown). Empty string removes it'),
    icon: text('SVG markup; sanitized. Clears iconBase64'),
    iconBase64: text('Base64 PNG, JPEG, GIF or WebP. Clears icon'),
    labels: Type.Optional(LabelsPatchSchema),
  },
  { additionalProperties: false },
);

export type ProductPatch = Static<typeof ProductPatchSchema>;
