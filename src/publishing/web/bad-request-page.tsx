import { Layout } from './layout.js';
import type { SiteInfo } from './model.js';

/** A page address with a query value the page cannot use (400): says which and how to fix it. */
export function BadRequestPage(props: { site: SiteInfo; what: string }) {
  return (
    <Layout site={props.site} head={{ title: `Bad request · ${props.site.name}`, noindex: true }}>
      <div class="wrap not-found">
        <h1>Bad request</h1>
        <p>{props.what}</p>
        <p>
          <a href="/">Browse all extensions</a>
        </p>
      </div>
    </Layout>
  );
}
