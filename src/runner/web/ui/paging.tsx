import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from './api.js';
import type { Page } from './types.js';

/** What a paged list (`{ items, nextCursor }`, e.g. GET /api/runs, GET /api/schedules) shows so far. */
export interface Listing<T> {
  items: T[];
  next: string | null;
  loading: boolean;
  error: ApiError | null;
}

function pageAt(path: string, cursor: string | null): string {
  return cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}` : path;
}

function asApiError(e: unknown): ApiError {
  return e instanceof ApiError ? e : new ApiError({ status: 0, detail: String(e) });
}

/**
 * The pages of a cursor-paged list at `path` (null: nothing yet): its first page, and again from
 * the first when `path` or `tick` changes; `more()` appends the next page. `reload()` (after a
 * change the user made) reads again as many items as are shown, page by page, so the rows the
 * user opened stay listed.
 */
export function usePages<T>(path: string | null, tick = 0): { list: Listing<T>; more(): void; reload(): void } {
  const [list, setList] = useState<Listing<T>>({ items: [], next: null, loading: path !== null, error: null });
  const [again, setAgain] = useState(0);
  const shown = useRef(list);
  shown.current = list;
  const keep = useRef(0);

  useEffect(() => {
    if (path === null) return;
    const abort = new AbortController();
    const atLeast = keep.current;
    keep.current = 0;
    setList((l) => ({ ...l, loading: true, error: null }));
    void (async () => {
      try {
        let items: T[] = [];
        let next: string | null = null;
        do {
          const page: Page<T> = await get<Page<T>>(pageAt(path, next), abort.signal);
          items = [...items, ...page.items];
          next = page.nextCursor;
        } while (next && items.length < atLeast);
        setList({ items, next, loading: false, error: null });
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;
        setList((l) => ({ ...l, loading: false, error: asApiError(e) }));
      }
    })();
    return () => abort.abort();
  }, [path, tick, again]);

  const more = useCallback(() => {
    const cursor = shown.current.next;
    if (path === null || !cursor) return;
    setList((l) => ({ ...l, loading: true, error: null }));
    get<Page<T>>(pageAt(path, cursor)).then(
      (page) => setList((l) => ({ items: [...l.items, ...page.items], next: page.nextCursor, loading: false, error: null })),
      (e: unknown) => setList((l) => ({ ...l, loading: false, error: asApiError(e) })),
    );
  }, [path]);

  const reload = useCallback(() => {
    keep.current = shown.current.items.length;
    setAgain((n) => n + 1);
  }, []);

  return { list, more, reload };
}

/** The button under a paged list that appends its next page; nothing on the last page. */
export function LoadMore(props: { list: Listing<unknown>; more(): void; what: string }) {
  if (!props.list.next) return null;
  return (
    <div class="buttons more">
      <button type="button" class="secondary" disabled={props.list.loading} onClick={props.more}>
        {props.list.loading ? 'Loading…' : `Load more ${props.what}`}
      </button>
    </div>
  );
}
