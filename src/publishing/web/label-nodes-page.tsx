import { Layout } from './layout.js';
import type { LabelNodesPageModel, SiteInfo } from './model.js';
import { NodeGroups } from './product-page.js';

/**
 * A label's full node list, a page at a time (`/product/<id>/nodes?label=…&page=…`): the product
 * page shows each label's first nodes only and links here (web/product-nodes.ts).
 */
export function LabelNodesPage(props: { site: SiteInfo; m: LabelNodesPageModel }) {
  const { site, m } = props;
  const nodes = (n: number) => (n === 1 ? '1 node' : `${n.toLocaleString('en')} nodes`);
  const last = m.first + m.groups.reduce((n, g) => n + g.nodes.length, 0) - 1;
  const pager =
    m.pages > 1 ? (
      <nav class="pagination" aria-label="Pages">
        {m.previousUrl ? (
          <a class="page-step" href={m.previousUrl} rel="prev">
            ← Previous
          </a>
        ) : null}
        <span class="page-current" aria-current="page">
          Page {m.page} of {m.pages}
        </span>
        {m.nextUrl ? (
          <a class="page-step" href={m.nextUrl} rel="next">
            Next →
          </a>
        ) : null}
      </nav>
    ) : null;
  return (
    <Layout site={site} head={{ title: `Nodes of ${m.productName} ${m.label}${m.page > 1 ? `, page ${m.page}` : ''} · ${site.name}`, canonical: `${site.baseUrl}${m.productUrl}`, noindex: m.productHidden || m.page > 1 }}>
      {m.productHidden ? (
        <div class="notice" role="status">
          <p>
            <strong>Not live yet.</strong> This page is reachable by its address but is not listed in the catalog,
            search or feeds until staff make it live.
          </p>
        </div>
      ) : null}
      <div class="wrap label-nodes">
        <p class="changes-back">
          <a href={m.productUrl}>← {m.productName}</a>
        </p>
        <h1>
          Nodes of {m.productName} {m.label}
        </h1>
        <p class="hint" role="status">
          {nodes(m.count)} in update site {m.label}
          {m.recommended ? ' (recommended)' : ''}
          {m.pages > 1 ? `; ${m.first.toLocaleString('en')}–${last.toLocaleString('en')} on this page` : ''}.
        </p>
        {m.labels.length > 1 ? (
          <p class="label-nodes-labels">
            Other update sites:{' '}
            {m.labels
              .filter((l) => !l.current)
              .map((l, i) => (
                <span key={l.label}>
                  {i > 0 ? ', ' : ''}
                  <a href={l.url}>{l.label}</a> ({nodes(l.count)})
                </span>
              ))}
          </p>
        ) : null}
        {pager}
        <section class="card-section" aria-label={`Nodes of ${m.label}`}>
          <NodeGroups groups={m.groups} />
        </section>
        {pager}
      </div>
    </Layout>
  );
}
