import type { SiteInfo } from './model.js';
import { MessagePage } from './not-found-page.js';

/** A page address with a query value the page cannot use (400): says which and how to fix it. */
export function BadRequestPage(props: { site: SiteInfo; what: string }) {
  return <MessagePage site={props.site} title="Bad request" what={props.what} />;
}
