// A deprecated label's notice (docs/vendors.md#deprecating-and-withdrawing-a-label), on the product
// page's install entry, above the page when the recommended label is deprecated, and on node pages
// whose label is deprecated.
import { labelAnchor, type LabelNoticeView } from '../notices/view.js';
import type { InstallLabel } from './model.js';

function Replacement(props: { n: LabelNoticeView; productUrl: string }) {
  const { n, productUrl } = props;
  return n.replacement ? (
    <>
      {' '}
      Use <a href={`${productUrl}#${labelAnchor(n.replacement)}`}>{n.replacement}</a> instead.
    </>
  ) : null;
}

/** The banner inside a label's install entry, or on a node page (`productUrl` '' on the product page itself). */
export function LabelNotice(props: { notice: LabelNoticeView | null | undefined; productUrl?: string; node?: boolean }) {
  const n = props.notice;
  if (!n) return null;
  return (
    <div class="label-notice" role="note">
      <p>
        <strong>{props.node ? `Label ${n.label} is deprecated` : 'Deprecated'}</strong>
        <small> since {n.since.slice(0, 10)}</small>
        {n.message ? <>: {n.message}</> : '.'}
        <Replacement n={n} productUrl={props.productUrl ?? ''} />
      </p>
    </div>
  );
}

/** Near the top of the product page: the label it recommends is deprecated. */
export function RecommendedNotice(props: { labels: InstallLabel[] | null }) {
  const l = props.labels?.find((x) => x.recommended);
  const n = l?.notice;
  if (!l || !n) return null;
  return (
    <div class="notice" role="status">
      <p>
        <strong>The recommended label {l.label} is deprecated.</strong>
        {n.message ? ` ${n.message}` : ''}
        {n.replacement ? (
          <>
            {' '}
            See <a href={`#${labelAnchor(n.replacement)}`}>{n.replacement}</a>.
          </>
        ) : null}
      </p>
    </div>
  );
}
