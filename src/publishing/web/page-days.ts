import type { PageChanges } from './page-changes.js';

/** Far above any page change count: each day adds this much, so counts of different days never meet. */
const DAY_STEP = 2 ** 32;

/**
 * The page change counter (page-changes.ts), moved on as well when the product page's
 * chart gains a day (stats/service.ts chartDay): download counts are written every two seconds
 * without touching the counter (they would re-render every page that often), and the pages,
 * shown through complete days only, change once a day. Still a number that only grows: the
 * counter's value plus the day's number times 2^32 (a counter that reaches 2^32 within one day
 * is out of reach).
 */
export function withChartDays(changes: PageChanges, chartDay: () => number): PageChanges {
  return {
    current() {
      const day = chartDay() * DAY_STEP;
      const seq = changes.current();
      return typeof seq === 'number' ? seq + day : seq.then((s) => s + day);
    },
  };
}
