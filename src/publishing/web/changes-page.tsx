import type { ChangedNode, NodeRef } from '../changes/diff.js';
import { describeChange } from '../changes/diff.js';
import { COMPARE_PAGE } from '../changes/compare.js';
import type { ChangeSources, Comparison } from '../changes/service.js';
import { Layout } from './layout.js';
import type { SiteInfo } from './model.js';
import { nodeUrl } from '../model/node-url.js';

/** What changed between two labels of a product: `/product/<id>/changes?from=&to=`. */
export interface ChangesPageModel {
  productId: string;
  productName: string;
  hidden: boolean;
  sources: ChangeSources;
  comparison: Comparison | null;
  /** The side with no default when nothing was compared: no label at all, or nothing earlier than `to`. */
  missing: 'from' | 'to' | null;
  /** `to` as asked or defaulted, when `from` is what is missing. */
  to: string | null;
  /** Factory classes that have a node page now. */
  paged: ReadonlySet<string>;
}

function Options(props: { sources: ChangeSources; selected: string | null }) {
  return (
    <>
      {props.sources.labels.map((l) => (
        <optgroup key={l.label} label={`Label ${l.label}`}>
          {l.uploaded ? (
            <option value={l.label} selected={props.selected === l.label}>
              {l.label}
              {l.recommended ? ' (recommended)' : ''}
            </option>
          ) : null}
          {l.releases.map((n) => (
            <option key={n} value={`${l.label}@${n}`} selected={props.selected === `${l.label}@${n}`}>
              {l.label} release {n}
              {n === l.current ? ' (current)' : ''}
            </option>
          ))}
        </optgroup>
      ))}
    </>
  );
}

function NodeName(props: { m: ChangesPageModel; n: NodeRef }) {
  const { m, n } = props;
  return (
    <span class="change-node">
      {m.paged.has(n.factoryClass) ? <a href={nodeUrl(m.productId, n.factoryClass)}>{n.name}</a> : <strong>{n.name}</strong>}
      {n.categoryNames.length ? <small> in {n.categoryNames.join(' / ')}</small> : null}
    </span>
  );
}

function Bucket(props: { m: ChangesPageModel; id: string; title: string; badge: string; nodes: (NodeRef | ChangedNode)[]; total: number }) {
  const { m, nodes, total } = props;
  if (nodes.length === 0) return null;
  return (
    <section class="card-section changes-bucket" aria-labelledby={props.id}>
      <h2 id={props.id}>
        <span class={`badge ${props.badge}`}>{props.title}</span> {total.toLocaleString('en')} {total === 1 ? 'node' : 'nodes'}
        {nodes.length < total ? <small class="changes-part"> ({nodes.length.toLocaleString('en')} on this page)</small> : null}
      </h2>
      <ul class="change-list">
        {nodes.map((n) => (
          <li key={n.factoryClass}>
            <NodeName m={m} n={n} />
            {'changes' in n && n.changes.length ? (
              <ul class="change-details">
                {n.changes.map((c, i) => (
                  <li key={i}>{describeChange(c)}</li>
                ))}
              </ul>
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}

export function ChangesPage(props: { site: SiteInfo; m: ChangesPageModel }) {
  const { site, m } = props;
  const c = m.comparison;
  const productUrl = `/product/${m.productId}`;
  const d = c?.diff;
  const n = c?.counts;
  const total = n ? n.added + n.removed + n.deprecated + n.changed : 0;
  const pageHref = (page: number) => {
    const q = new URLSearchParams({ from: c!.from.value, to: c!.to.value });
    if (page > 1) q.set('page', String(page));
    return `${productUrl}/changes?${q.toString()}`;
  };
  const pager =
    c && c.pages > 1 ? (
      <nav class="pagination" aria-label="Pages">
        {c.page > 1 ? (
          <a class="page-step" href={pageHref(c.page - 1)} rel="prev">
            ← Previous
          </a>
        ) : null}
        <span class="page-current" aria-current="page">
          Page {c.page} of {c.pages}
        </span>
        {c.page < c.pages ? (
          <a class="page-step" href={pageHref(c.page + 1)} rel="next">
            Next →
          </a>
        ) : null}
      </nav>
    ) : null;
  return (
    <Layout
      site={site}
      head={{
        title: `What changed · ${m.productName} · ${site.name}`,
        description: `Nodes added, removed, deprecated and changed between labels of ${m.productName}`,
        canonical: `${site.baseUrl}${productUrl}/changes`,
        noindex: m.hidden,
      }}
    >
      {m.hidden ? (
        <div class="notice" role="status">
          <p>
            <strong>Not live yet.</strong> This page is reachable by its address but is not listed in the catalog,
            search or feeds until staff make it live.
          </p>
        </div>
      ) : null}
      <div class="wrap changes-page">
        <p class="changes-back">
          <a href={productUrl}>← {m.productName}</a>
        </p>
        <h1>What changed</h1>
        {m.sources.labels.length ? (
          <form class="changes-form" action={`${productUrl}/changes`} method="get">
            <label>
              <span>From</span>
              <select name="from">
                <Options sources={m.sources} selected={c?.from.value ?? null} />
              </select>
            </label>
            <label>
              <span>To</span>
              <select name="to">
                <Options sources={m.sources} selected={c?.to.value ?? m.to} />
              </select>
            </label>
            <button type="submit" class="button">
              Compare
            </button>
          </form>
        ) : null}
        {!c ? (
          <p class="empty" role="status">
            {m.missing === 'to'
              ? 'No update site of this extension has been crawled yet: there is nothing to compare.'
              : `There is no earlier label or release to compare ${m.to ?? 'this label'} with. Choose two above.`}
          </p>
        ) : (
          <>
            <p class="changes-summary" role="status">
              From <strong>{c.from.value}</strong> to <strong>{c.to.value}</strong>:{' '}
              {total === 0
                ? `no node changes (${n!.unchanged} ${n!.unchanged === 1 ? 'node' : 'nodes'} in both, unchanged).`
                : `${n!.added} added, ${n!.removed} removed, ${n!.deprecated} deprecated, ${n!.changed} changed, ${n!.unchanged} unchanged.`}
              {c.pages > 1 ? ` Listed ${COMPARE_PAGE} at a time.` : ''}
            </p>
            {pager}
            <Bucket m={m} id="added" title="Added" badge="badge-added" nodes={d!.added} total={n!.added} />
            <Bucket m={m} id="removed" title="Removed" badge="badge-removed" nodes={d!.removed} total={n!.removed} />
            <Bucket m={m} id="deprecated" title="Deprecated" badge="badge-deprecated" nodes={d!.deprecated} total={n!.deprecated} />
            <Bucket m={m} id="changed" title="Changed" badge="badge-changed" nodes={d!.changed} total={n!.changed} />
            {pager}
          </>
        )}
      </div>
    </Layout>
  );
}

/** A `from`/`to` value the page cannot use (400 malformed, 404 unknown): says which and why, with the way back. */
export function ChangesErrorPage(props: { site: SiteInfo; productId: string; message: string; notFound: boolean }) {
  const title = props.notFound ? 'Not found' : 'Cannot compare';
  return (
    <Layout site={props.site} head={{ title: `${title} · ${props.site.name}`, noindex: true }}>
      <div class="wrap not-found">
        <h1>{title}</h1>
        <p>{props.message}</p>
        <p>
          <a href={`/product/${props.productId}/changes`}>Compare the latest labels</a>
        </p>
      </div>
    </Layout>
  );
}
