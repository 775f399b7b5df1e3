import { Layout } from './layout.js';
import type { NodeSearchModel, SiteInfo } from './model.js';
import { NodeIcon } from './node-page.js';

/**
 * Node search over live extensions (`/nodes?q=&product=&category=`): a plain GET form, so the
 * filters work without script; the selects offer what is indexed.
 */
export function NodeSearchPage(props: { site: SiteInfo; m: NodeSearchModel }) {
  const { site, m } = props;
  const product = m.product ?? null;
  const category = m.category ?? null;
  const works = m.works ?? null;
  const facets = m.facets ?? { products: [], categories: [] };
  const filtered = product !== null || category !== null || works !== null;
  const asked = m.query !== '' || filtered;
  const productName = product !== null ? (facets.products.find((p) => p.id === product)?.name ?? product) : null;
  const title = m.query ? `Nodes: ${m.query}` : productName ? `Nodes of ${productName}` : category ? `Nodes in ${category}` : works ? `Nodes for platform release ${works}` : 'Node search';
  return (
    <Layout site={site} head={{ title: `${title} · ${site.name}`, canonical: `${site.baseUrl}/nodes`, noindex: asked }}>
      <div class="wrap node-search">
        <div class="catalog-head">
          <h1>Node search</h1>
          <p>Find nodes of every live extension by name, description, keyword, category or extension.</p>
        </div>
        <search class="node-search-form">
          <form action="/nodes" method="get">
            <div class="field field-q">
              <label for="node-q">Search nodes</label>
              <input id="node-q" type="search" name="q" value={m.query} maxLength={200} placeholder="e.g. excel writer" />
            </div>
            <div class="field">
              <label for="node-product">Extension</label>
              <select id="node-product" name="product">
                <option value="">All extensions</option>
                {facets.products.map((p) => (
                  <option key={p.id} value={p.id} selected={p.id === product}>
                    {p.name}
                  </option>
                ))}
                {product !== null && !facets.products.some((p) => p.id === product) ? (
                  <option value={product} selected>
                    {product}
                  </option>
                ) : null}
              </select>
            </div>
            <div class="field">
              <label for="node-category">Category</label>
              <select id="node-category" name="category">
                <option value="">All categories</option>
                {facets.categories.map((c) => (
                  <option key={c} value={c} selected={c === category}>
                    {c}
                  </option>
                ))}
                {category !== null && !facets.categories.includes(category) ? (
                  <option value={category} selected>
                    {category}
                  </option>
                ) : null}
              </select>
            </div>
            <div class="field">
              <label for="node-works">Works with platform release</label>
              <input id="node-works" name="works" value={works ?? ''} placeholder="e.g. 5.3" inputMode="decimal" pattern="[0-9]{1,4}\.[0-9]{1,4}(\.[0-9]{1,4})?" maxLength={14} size={8} />
            </div>
            <div class="field field-submit">
              <button type="submit" class="button">
                Search
              </button>
              {asked ? (
                <a class="button secondary" href="/nodes">
                  Clear
                </a>
              ) : null}
            </div>
          </form>
        </search>
        {asked ? (
          <p role="status" class="node-search-status">
            {m.capped ? `The first ${m.hits.length} nodes found; add words or a filter to narrow the search.` : `${m.hits.length} ${m.hits.length === 1 ? 'node' : 'nodes'} found`}
          </p>
        ) : (
          <p class="hint">Type a word, or pick an extension or a category to list its nodes.</p>
        )}
        {m.hits.length ? (
          <ul class="node-hits">
            {m.hits.map((h) => (
              <li key={h.url} class="node-hit">
                <span class="node-icon-slot">
                  <NodeIcon url={h.iconUrl ?? null} size={h.iconSize} name={h.name} fallback={16} />
                </span>
                <div class="node-hit-body">
                  <a class="node-hit-name" href={h.url}>
                    {h.name}
                  </a>
                  {h.shortDescription ? <p>{h.shortDescription}</p> : null}
                  <p class="node-hit-meta">
                    <a href={h.productUrl}>{h.productName}</a>
                    {h.category ? (
                      <>
                        {' · '}
                        {h.categoryUrl ? <a href={h.categoryUrl}>{h.category}</a> : <span>{h.category}</span>}
                      </>
                    ) : null}
                  </p>
                </div>
              </li>
            ))}
          </ul>
        ) : asked ? (
          <p class="empty">No node matches. Try fewer or other words, or another filter.</p>
        ) : null}
      </div>
    </Layout>
  );
}
