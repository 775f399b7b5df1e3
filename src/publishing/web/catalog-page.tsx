import { Icon, Layout } from './layout.js';
import type { CatalogCard, CatalogPageModel, SiteInfo } from './model.js';

function pageHref(query: string, page: number, works = ''): string {
  const params = new URLSearchParams();
  if (query) params.set('q', query);
  if (works) params.set('works', works);
  if (page > 1) params.set('page', String(page));
  const s = params.toString();
  return s ? `/?${s}` : '/';
}

/**
 * "Works with <release>" (docs/vendors.md#platform-compatibility): a plain GET form, so it needs
 * no script; it carries the search words along and starts again at page 1.
 */
function WorksFilter(props: { query: string; works: string }) {
  return (
    <form class="works-filter" action="/" method="get">
      {props.query ? <input type="hidden" name="q" value={props.query} /> : null}
      <label for="works">Works with platform release</label>
      <input id="works" name="works" value={props.works} placeholder="e.g. 5.3" inputMode="decimal" pattern="[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?" maxLength={14} size={8} />
      <button type="submit" class="button secondary">Filter</button>
      {props.works ? <a href={pageHref(props.query, 1)}>Any release</a> : null}
    </form>
  );
}

/** The day of an ISO timestamp (UTC), as the card shows it. */
const day = (iso: string) => iso.slice(0, 10);

/** Version, vendor, nodes and last update of a card; a fact not known is left out. */
function CardFacts(props: { c: CatalogCard }) {
  const { c } = props;
  if (c.nodeCount === undefined) return null;
  return (
    <dl class="card-facts">
      {c.version ? (
        <div>
          <dt>Version</dt>
          <dd>{c.version}</dd>
        </div>
      ) : null}
      {c.vendor ? (
        <div>
          <dt>Vendor</dt>
          <dd>{c.vendor}</dd>
        </div>
      ) : null}
      <div>
        <dt>Nodes</dt>
        <dd>{c.nodeCount}</dd>
      </div>
      {c.lastUpdate ? (
        <div>
          <dt>Updated</dt>
          <dd>
            <time datetime={c.lastUpdate}>{day(c.lastUpdate)}</time>
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

export function CatalogPage(props: { site: SiteInfo; m: CatalogPageModel }) {
  const { site, m } = props;
  const works = m.works ?? '';
  const searching = m.query !== '' || works !== '';
  const worksText = works ? ` working with platform ${works}` : '';
  const heading = m.query !== ''
    ? `${m.total} ${m.total === 1 ? 'extension matches' : 'extensions match'} “${m.query}”${worksText}`
    : works
      ? `${m.total} ${m.total === 1 ? 'extension works' : 'extensions work'} with platform ${works}`
      : 'Extensions';
  return (
    <Layout
      site={site}
      query={m.query}
      head={{
        title: searching ? `Search: ${m.query} · ${site.name}` : `${site.name}: extensions`,
        description: `Extensions for the analytics platform, installable from their update sites.`,
        canonical: `${site.baseUrl}${pageHref(m.query, m.page, works)}`,
        // Search result pages are not worth indexing; the catalog itself is.
        noindex: searching,
      }}
    >
      <div class="wrap">
        <div class="catalog-head">
          <h1>{heading}</h1>
          {searching ? (
            <p>
              <a href="/">Show all extensions</a>
            </p>
          ) : (
            <p>Browse extensions and install them from their update sites.</p>
          )}
          <WorksFilter query={m.query} works={works} />
        </div>
        {m.cards.length ? (
          <ul class="cards">
            {m.cards.map((c) => (
              <li key={c.id}>
                <a class="card" href={`/product/${c.id}`} style={{ '--c1': c.colors.color1, '--c2': c.colors.color2, '--fg': c.colors.text, ...(c.colors.scrim ? { '--scrim': c.colors.scrim } : {}) }}>
                  <Icon url={c.iconUrl} name={c.name} size={56} />
                  <h2>{c.name}</h2>
                  {c.description ? <p>{c.description}</p> : null}
                  <CardFacts c={c} />
                </a>
              </li>
            ))}
          </ul>
        ) : (
          <p class="empty">
            {searching ? 'No extension matches your search. Try fewer or other words.' : 'No extensions are live yet.'}
          </p>
        )}
        {m.pages > 1 ? (
          <nav class="pagination" aria-label="Pages">
            {m.page > 1 ? (
              <a class="page-step" href={pageHref(m.query, m.page - 1, works)} rel="prev">
                ← Previous
              </a>
            ) : null}
            <span class="page-current" aria-current="page">
              Page {m.page} of {m.pages}
            </span>
            {m.page < m.pages ? (
              <a class="page-step" href={pageHref(m.query, m.page + 1, works)} rel="next">
                Next →
              </a>
            ) : null}
          </nav>
        ) : null}
      </div>
    </Layout>
  );
}
