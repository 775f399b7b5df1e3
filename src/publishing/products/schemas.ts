/**
 * Response schemas of the product routes. fastify serializes answers with them, so a property
 * missing here would vanish from the answer: they list everything ProductView, its fields and the
 * PATCH answer hold. No `anyOf` (fast-json-stringify checks every branch on each answer).
 */
import { Type } from 'typebox';
import { ContactSchema, LabelNoticeSchema, StyleSchema } from './patch-schema.js';

export const ProductParams = Type.Object({ id: Type.String({ maxLength: 200, description: 'the product ID' }) });

/** The page fields as stored: only those set are present. */
export const ProductFieldsSchema = Type.Object(
  {
    name: Type.String({ description: 'Product title' }),
    description: Type.Optional(Type.String({ description: 'Tagline shown in listings and search' })),
    text: Type.Optional(Type.String({ description: 'Full page body (Markdown)' })),
    changelog: Type.Optional(Type.String({ description: 'Keep a Changelog Markdown' })),
    license: Type.Optional(Type.String({ description: 'License terms (Markdown)' })),
    faq: Type.Optional(Type.String({ description: 'Questions (## headings) and answers (Markdown)' })),
    contact: Type.Optional(ContactSchema),
    style: Type.Optional(StyleSchema),
    instructions: Type.Optional(Type.String({ description: 'Post-install setup (Markdown)' })),
    icon: Type.Optional(Type.String({ description: 'SVG markup, sanitized' })),
    iconBase64: Type.Optional(Type.String({ description: 'Base64 PNG, JPEG, GIF or WebP' })),
    labels: Type.Optional(Type.Record(Type.String(), LabelNoticeSchema, { description: 'Deprecated and withdrawn labels, by label' })),
  },
  { additionalProperties: false },
);

export const FieldProblemSchema = Type.Object({
  field: Type.String({ description: 'dotted path of the field, e.g. style.color1' }),
  message: Type.String(),
  line: Type.Optional(Type.Integer({ minimum: 1, description: 'line inside a multi-line field' })),
});

const productProperties = {
  productId: Type.String(),
  name: Type.String(),
  state: Type.Unsafe<'hidden' | 'live'>({ type: 'string', enum: ['hidden', 'live'], description: 'only live products are listed in the catalog' }),
  pageUrl: Type.String({ description: 'the public product page' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  fields: ProductFieldsSchema,
  warnings: Type.Array(FieldProblemSchema, { description: 'accepted, but worth a look (e.g. a placeholder left in the text)' }),
};

/**
 * A crawled label and the platform releases it installs into
 * (docs/vendors.md#platform-compatibility).
 */
export const ProductLabelSchema = Type.Object({
  label: Type.String(),
  url: Type.String({ description: 'the label\'s update site on the download host' }),
  platformRange: Type.Unsafe<string | null>({
    type: ['string', 'null'],
    description: 'OSGi version range of the platform releases the label installs into (e.g. `[4.3.0,6.0.0)`), from the version ranges its units require of the platform\'s core units; null when none does',
  }),
  platformReleases: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'the same as people read it, e.g. `5.1 – 5.3`, `5.2 and later`' }),
});

/** GET /api/products/:id */
export const ProductResponse = Type.Object(
  { ...productProperties, labels: Type.Array(ProductLabelSchema, { description: 'every crawled label that has an update-site folder, with its platform range' }) },
  { description: 'The product and its page fields' },
);

/** PATCH /api/products/:id */
export const PatchResponse = Type.Object(
  {
    ...productProperties,
    changedFields: Type.Array(Type.String(), { description: 'fields whose value this PATCH changed (or would change, dry run)' }),
    dryRun: Type.Optional(Type.Boolean({ description: 'present (true) when nothing was stored: `?dryRun=true`' })),
  },
  { description: 'The product after the change (or as it would be, dry run)' },
);
