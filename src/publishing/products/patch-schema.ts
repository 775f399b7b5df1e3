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
  },
  { additionalProperties: false },
);

export type ProductPatch = Static<typeof ProductPatchSchema>;
