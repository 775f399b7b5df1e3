import { Layout } from './layout.js';
import type { SiteInfo } from './model.js';

export function NotFoundPage(props: { site: SiteInfo; what: string }) {
  return (
    <Layout site={props.site} head={{ title: `Not found · ${props.site.name}`, noindex: true }}>
      <div class="wrap not-found">
        <h1>Not found</h1>
        <p>{props.what}</p>
        <p>
          <a href="/">Browse all extensions</a>
        </p>
      </div>
    </Layout>
  );
}
