/**
 * The log lines, virtualised: rows have one fixed height, so only the rows in view (and a few
 * around them) are in the DOM, and 200,000 lines scroll like 200. Text is rendered as text.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { formatClock } from './format.js';
import { ERROR_LINE, type LogLines } from './log-lines.js';

/** Height of a row in px: keep in step with `.log-line` in app.css. */
export const ROW = 20;
const OVERSCAN = 20;

function Highlighted(props: { text: string; query: string }) {
  const { text, query } = props;
  if (!query) return <>{text}</>;
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  const parts = [];
  let at = 0;
  for (let i = lower.indexOf(q); i >= 0 && parts.length < 200; i = lower.indexOf(q, at)) {
    if (i > at) parts.push(text.slice(at, i));
    parts.push(<mark key={i}>{text.slice(i, i + q.length)}</mark>);
    at = i + q.length;
  }
  parts.push(text.slice(at));
  return <>{parts}</>;
}

export function LogRows(props: {
  lines: LogLines;
  /** Indices of the lines to show; null: all of them. */
  indices: number[] | null;
  version: number;
  query: string;
  follow: boolean;
  onFollow(follow: boolean): void;
}) {
  const { lines, indices, follow, onFollow } = props;
  const count = indices ? indices.length : lines.text.length;
  const box = useRef<HTMLElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });

  useEffect(() => {
    const el = box.current!;
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight });
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // Following: the newest line stays in view as lines arrive.
  useLayoutEffect(() => {
    const el = box.current!;
    if (follow && el.scrollTop + el.clientHeight < el.scrollHeight) {
      el.scrollTop = el.scrollHeight;
      setView({ top: el.scrollTop, height: el.clientHeight });
    }
  }, [follow, count, props.version]);

  const onScroll = () => {
    const el = box.current!;
    setView({ top: el.scrollTop, height: el.clientHeight });
    const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW;
    // Scrolling up (wheel, keys, scroll bar) pauses following; back at the bottom resumes it.
    if (atBottom !== follow) onFollow(atBottom);
  };

  const first = Math.max(0, Math.floor(view.top / ROW) - OVERSCAN);
  const last = Math.min(count, Math.ceil((view.top + view.height) / ROW) + OVERSCAN);
  const rows = [];
  for (let r = first; r < last; r++) {
    const i = indices ? indices[r]! : r;
    const text = lines.text[i]!;
    rows.push(
      <div key={i} class={ERROR_LINE.test(text) ? 'log-line err' : 'log-line'}>
        <span class="ln" aria-hidden="true">
          {i + 1}
        </span>
        <time class="lw" dateTime={lines.time[i]}>
          {formatClock(lines.time[i] ?? '')}
        </time>
        <span class="lt">
          <Highlighted text={text} query={props.query} />
        </span>
      </div>,
    );
  }
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable with the keyboard to scroll it
    <section ref={box} class="log-scroll" tabIndex={0} aria-label="Log lines" onScroll={onScroll}>
      <div class="log-space" style={{ height: `${count * ROW}px` }}>
        <div class="log-rows" style={{ transform: `translateY(${first * ROW}px)` }}>
          {rows}
        </div>
      </div>
    </section>
  );
}
