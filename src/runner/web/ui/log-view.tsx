/**
 * A run's log, live: follow or pause, search, errors only, one attempt or all, and the whole log
 * as a file. Lines arrive from the log stream (log-stream.ts) and are shown by LogRows.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type ApiError, get, saveBlob, withQuery } from './api.js';
import { ErrorNote } from './components.js';
import { useAction } from './hooks.js';
import { FilteredView, LogLines } from './log-lines.js';
import { LogRows } from './log-rows.js';
import { followLog } from './log-stream.js';
import type { LogChunk, RunStatus } from './types.js';

const PAGE = 1000;

/** Every chunk of the run through GET /api/runs/{id}/logs, page by page, as one file. */
async function downloadWholeLog(runId: string): Promise<void> {
  const parts: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await get<{ items: LogChunk[]; nextAfter: string; finished: boolean }>(
      withQuery(`/api/runs/${encodeURIComponent(runId)}/logs`, { after, limit: PAGE }),
    );
    for (const c of page.items) parts.push(c.text);
    if (page.items.length < PAGE) break;
    after = page.nextAfter;
  }
  saveBlob(new Blob(parts, { type: 'text/plain;charset=utf-8' }), `run-${runId}.log`);
}

type Link = 'connecting' | 'live' | 'retrying' | 'ended';

export function LogView(props: { runId: string; attempts: number; onEnd(status: RunStatus | 'deleted'): void }) {
  const { runId } = props;
  const lines = useRef(new LogLines()).current;
  const filtered = useRef(new FilteredView()).current;
  const [version, setVersion] = useState(0);
  const [link, setLink] = useState<Link>('connecting');
  const [failure, setFailure] = useState<ApiError | null>(null);
  const [follow, setFollow] = useState(true);
  const [query, setQuery] = useState('');
  const [errorsOnly, setErrorsOnly] = useState(false);
  const [attempt, setAttempt] = useState<number | null>(null);
  const onEnd = useRef(props.onEnd);
  onEnd.current = props.onEnd;

  useEffect(() => {
    const abort = new AbortController();
    let frame = 0;
    // Many chunks a second become one render per frame.
    const changed = () => {
      if (!frame) frame = requestAnimationFrame(() => {
        frame = 0;
        setVersion(lines.version);
      });
    };
    void followLog(
      runId,
      {
        chunks: (c) => {
          lines.append(c);
          changed();
        },
        end: (status) => {
          setLink('ended');
          onEnd.current(status);
        },
        failed: setFailure,
        connection: (live) => setLink(live ? 'live' : 'retrying'),
      },
      abort.signal,
    );
    return () => {
      abort.abort();
      cancelAnimationFrame(frame);
    };
  }, [runId, lines]);

  const indices = useMemo(() => filtered.update(lines, { attempt, query, errorsOnly }), [version, attempt, query, errorsOnly, lines, filtered]);
  const attempts = useMemo(() => {
    const seen = new Set(lines.attempts());
    for (let a = 1; a <= props.attempts; a++) seen.add(a);
    return [...seen].sort((a, b) => a - b);
  }, [version, props.attempts, lines]);
  const save = useAction(() => downloadWholeLog(runId));
  const total = lines.text.length;
  const shown = indices ? indices.length : total;

  return (
    <section class="card log" aria-labelledby="log-h">
      <div class="log-head">
        <h2 id="log-h">Log</h2>
        <span class={`log-link ${link}`}>
          {link === 'live' ? 'Live' : link === 'retrying' ? 'Reconnecting…' : link === 'ended' ? 'Complete' : 'Connecting…'}
        </span>
      </div>
      <div class="log-tools">
        <div class="log-search">
          <label for="log-q">Search the log</label>
          <input id="log-q" type="search" value={query} onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)} />
        </div>
        <div class="log-attempt">
          <label for="log-a">Attempt</label>
          <select id="log-a" value={attempt === null ? '' : String(attempt)} onChange={(e) => {
            const v = (e.currentTarget as HTMLSelectElement).value;
            setAttempt(v ? Number(v) : null);
          }}>
            <option value="">All attempts</option>
            {attempts.map((a) => (
              <option key={a} value={String(a)}>
                Attempt {a}
              </option>
            ))}
          </select>
        </div>
        <label class="check">
          <input type="checkbox" checked={errorsOnly} onChange={(e) => setErrorsOnly((e.currentTarget as HTMLInputElement).checked)} /> Errors only
        </label>
        <div class="buttons">
          {/* A complete log has nothing more to follow: only a way back to its end. */}
          {link === 'ended' ? (
            !follow && (
              <button type="button" class="secondary small" onClick={() => setFollow(true)}>
                Go to the end
              </button>
            )
          ) : (
            <button type="button" class="secondary small" onClick={() => setFollow(!follow)}>
              {follow ? 'Pause' : 'Follow'}
            </button>
          )}
          <button type="button" class="secondary small" disabled={save.busy} onClick={() => void save.run()}>
            {save.busy ? 'Downloading…' : 'Download the whole log'}
          </button>
        </div>
      </div>
      <ErrorNote error={failure ?? save.error} />
      <p class="meta" id="log-count">
        {indices ? `${shown.toLocaleString()} of ${total.toLocaleString()} lines` : `${total.toLocaleString()} lines`}
        {follow || link === 'ended' ? '' : ' · paused'}
      </p>
      {shown === 0 && <p class="muted log-empty">{total === 0 ? (link === 'ended' ? 'The run wrote no log.' : 'No log lines yet.') : 'No line matches.'}</p>}
      <LogRows lines={lines} indices={indices} version={version} query={query} follow={follow} onFollow={setFollow} />
    </section>
  );
}
