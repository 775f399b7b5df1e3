import { Type } from 'typebox';

/**
 * `from`/`to` of the changes page and API. Longer than any valid value (MAX_SIDE_LENGTH), so a
 * wrong one is refused by the service with a message naming the parameter.
 */
export const ChangesQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ maxLength: 1024, description: '`<label>` or `<label>@<release number>`' })),
    to: Type.Optional(Type.String({ maxLength: 1024, description: '`<label>` or `<label>@<release number>`' })),
    page: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$', description: 'the page of nodes, from 1 (200 nodes a page)' })),
  },
  { additionalProperties: true },
);

const Side = Type.Object({
  label: Type.String(),
  release: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'null: the label as crawled now' }),
  value: Type.String({ description: 'as written in `from`/`to`' }),
});

const NodeRef = {
  factoryClass: Type.String(),
  name: Type.String(),
  categoryNames: Type.Array(Type.String()),
  deprecated: Type.Boolean(),
  url: Type.Unsafe<string | null>({ type: ['string', 'null'], description: 'the node page, null when no label has the node now' }),
};

const Change = Type.Object(
  {
    kind: Type.String({
      description:
        'name, category, undeprecated, port-added, port-removed, port-changed, port-group-added, port-group-removed, option-added, option-removed, option-moved, description',
    }),
    text: Type.String({ description: 'the change in words, as the page shows it' }),
  },
  { additionalProperties: true, description: 'with the fields of its kind (side, index, name, type, group, tab, from, to)' },
);

const Changed = Type.Object({ ...NodeRef, changes: Type.Array(Change) });

export const ChangesAnswer = Type.Object({
  from: Side,
  to: Side,
  added: Type.Array(Type.Object(NodeRef)),
  removed: Type.Array(Type.Object(NodeRef)),
  deprecated: Type.Array(Changed, { description: 'deprecated in `to`, not in `from`' }),
  changed: Type.Array(Changed),
  unchanged: Type.Integer({ description: 'nodes on both sides with no change' }),
  counts: Type.Object(
    { added: Type.Integer(), removed: Type.Integer(), deprecated: Type.Integer(), changed: Type.Integer(), unchanged: Type.Integer() },
    { description: 'every bucket\'s size; the lists above hold this page\'s part of them' },
  ),
  page: Type.Integer({ minimum: 1 }),
  pages: Type.Integer({ minimum: 1, description: 'pages of up to 200 nodes, the buckets in the order added, removed, deprecated, changed' }),
});
