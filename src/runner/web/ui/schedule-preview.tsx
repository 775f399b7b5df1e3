import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, withQuery } from './api.js';
import type { SchedulePreview } from './types.js';

/** A time in a given zone, as people there read it ("Mon, 7 Dec, 06:30"). */
export function inZone(iso: string, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, { timeZone, weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
  } catch {
    return iso;
  }
}

/** What the API makes of an expression as it is typed (a short pause first, so each key is not a request). */
export function usePreview(cron: string, timeZone: string): { preview: SchedulePreview | null; error: ApiError | null } {
  const [state, setState] = useState<{ preview: SchedulePreview | null; error: ApiError | null }>({ preview: null, error: null });
  useEffect(() => {
    if (cron.trim() === '') {
      setState({ preview: null, error: null });
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      get<SchedulePreview>(withQuery('/api/schedules/preview', { cron, timeZone }), abort.signal).then(
        (preview) => setState({ preview, error: null }),
        (e: unknown) => {
          if ((e as Error).name !== 'AbortError') setState({ preview: null, error: e instanceof ApiError ? e : new ApiError({ status: 0, detail: String(e) }) });
        },
      );
    }, 250);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [cron, timeZone]);
  return state;
}

/** The preview under the expression: its words and next fires, or why it is not valid. */
export function PreviewNote(props: { cron: string; timeZone: string; id: string }) {
  const { preview, error } = usePreview(props.cron, props.timeZone);
  return (
    <div class="preview" id={props.id} aria-live="polite">
      {error && <p class="field-error">{error.forField('cron') ?? error.forField('timeZone') ?? error.message}</p>}
      {preview && (
        <>
          <p>
            <strong>{preview.description}</strong> ({preview.timeZone})
          </p>
          <p class="meta">Next:</p>
          <ol class="meta fires">
            {preview.nextFireTimes.map((t) => (
              <li key={t}>
                <time dateTime={t}>{inZone(t, preview.timeZone)}</time>
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}
