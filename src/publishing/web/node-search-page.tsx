import { Layout } from './layout.js';
import type { NodeSearchModel, SiteInfo } from './model.js';

/** Node search over live extensions (`/nodes?q=`). */
export function NodeSearchPage(props: { site: SiteInfo; m: NodeSearchModel }) {
  const { site, m } = props;
  return (
    <Layout site={site} head={{ title: `${m.query ? `Nodes: ${m.query}` : 'Node search'} · ${site.name}`, canonical: `${site.baseUrl}/nodes` }}>
      <div class="wrap node-search">
        <h1>Node search</h1>
        <search>
          <form action="/nodes" method="get">
            <label for="node-q">Search nodes by name, description, category or extension</label>
            <input id="node-q" type="search" name="q" value={m.query} maxLength={200} />
            <button type="submit">Search</button>
          </form>
        </search>
        {m.query ? (
          <p role="status">
            {m.hits.length} {m.hits.length === 1 ? 'node' : 'nodes'} found
          </p>
        ) : null}
        <ul class="node-hits">
          {m.hits.map((h) => (
            <li key={h.url}>
              <a href={h.url}>{h.name}</a> <small>in {h.category}</small> · <a href={h.productUrl}>{h.productName}</a>
              {h.shortDescription ? <p>{h.shortDescription}</p> : null}
            </li>
          ))}
        </ul>
      </div>
    </Layout>
  );
}
