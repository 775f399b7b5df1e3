import { Layout } from './layout.js';
import type { SiteInfo } from './model.js';

/** A page that only says what went wrong (404, 400) and leads back to the catalog. */
export function MessagePage(props: { site: SiteInfo; title: string; what: string }) {
  return (
    <Layout site={props.site} head={{ title: `${props.title} · ${props.site.name}`, noindex: true }}>
      <div class="wrap not-found">
        <h1>{props.title}</h1>
        <p>{props.what}</p>
        <p>
          <a href="/">Browse all extensions</a>
        </p>
      </div>
    </Layout>
  );
}

export function NotFoundPage(props: { site: SiteInfo; what: string }) {
  return <MessagePage site={props.site} title="Not found" what={props.what} />;
}
