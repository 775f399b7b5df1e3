import type { DownloadsChartModel } from '../stats/service.js';
import { formatDate } from './dates.js';

/** Chart drawing units: one bar slot per day, bars scaled to the busiest day. */
const SLOT = 10;
const BAR = 8;
const HEIGHT = 100;

/** "12,345", independent of the server's locale. */
function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

const installs = (n: number) => `${formatCount(n)} install${n === 1 ? '' : 's'}`;

/**
 * The product page's installs (docs/vendors.md#download-counts): the total and a bar per day of the
 * last 90 complete days, an SVG drawn here on the server (no script). Screen readers get the
 * chart's title and a summary (`role="img"` named by its <title>, SVG-AAM §5.2), and everyone
 * gets every number as a table behind a disclosure. Shown once anything was counted.
 */
export function DownloadsChart(props: { d: DownloadsChartModel | undefined }) {
  const d = props.d;
  if (!d || d.total === 0) return null;
  const recent = d.days.reduce((a, x) => a + x.installs, 0);
  const busiest = d.days.reduce((a, x) => (x.installs > a.installs ? x : a), d.days[0] ?? { day: d.through, installs: 0 });
  const first = d.days[0]?.day ?? d.through;
  const width = d.days.length * SLOT;
  return (
    <section class="card-section installs" aria-label="Installs">
      <h2>Installs</h2>
      <p class="installs-totals">
        <span>
          <strong class="installs-total">{formatCount(d.total)}</strong> in all
        </span>
        <span>
          <strong class="installs-recent">{formatCount(recent)}</strong> in the last {d.days.length} days
        </span>
      </p>
      <svg class="installs-chart" viewBox={`0 0 ${width} ${HEIGHT}`} preserveAspectRatio="none" role="img" width="100%" height="120">
        <title>
          Installs per day, {formatDate(first)} to {formatDate(d.through)}
        </title>
        <desc>
          {installs(recent)} in {d.days.length} days; the busiest day was {formatDate(busiest.day)} with {installs(busiest.installs)}.
        </desc>
        <line class="installs-axis" x1="0" y1={HEIGHT - 0.5} x2={width} y2={HEIGHT - 0.5} />
        {d.days.map((x, i) => {
          if (x.installs === 0) return null;
          // At least one unit: a day with one install among thousands still shows.
          const h = Math.max(1, Math.round((x.installs / busiest.installs) * (HEIGHT - 2)));
          return (
            <rect key={x.day} class="installs-bar" x={i * SLOT + (SLOT - BAR) / 2} y={HEIGHT - 1 - h} width={BAR} height={h} data-day={x.day} data-installs={x.installs}>
              <title>
                {formatDate(x.day)}: {installs(x.installs)}
              </title>
            </rect>
          );
        })}
      </svg>
      <p class="installs-range" aria-hidden="true">
        <span>{formatDate(first)}</span>
        <span>{formatDate(d.through)}</span>
      </p>
      <details class="installs-table">
        <summary>Installs per day</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              <th scope="col">Installs</th>
            </tr>
          </thead>
          <tbody>
            {[...d.days].reverse().map((x) => (
              <tr key={x.day}>
                <td>
                  <time dateTime={x.day}>{formatDate(x.day)}</time>
                </td>
                <td>{formatCount(x.installs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
      <p class="hint">
        Installs and updates from this page's update sites and archives, counted by complete day (UTC) through {formatDate(d.through)}.
      </p>
    </section>
  );
}
