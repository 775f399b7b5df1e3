import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from './api.js';

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

/** GETs `path` (null: nothing yet) and again when it changes or on `reload()`. */
export function useApi<T>(path: string | null): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiError | null; loading: boolean }>({ data: null, error: null, loading: path !== null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (path === null) return;
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    get<T>(path, abort.signal).then(
      (data) => setState({ data, error: null, loading: false }),
      (e: unknown) => {
        if ((e as Error).name === 'AbortError') return;
        setState((s) => ({ data: s.data, error: e instanceof ApiError ? e : new ApiError({ status: 0, detail: String(e) }), loading: false }));
      },
    );
    return () => abort.abort();
  }, [path, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export interface Action<A extends unknown[]> {
  busy: boolean;
  error: ApiError | null;
  run(...args: A): Promise<boolean>;
  clear(): void;
}

/** An action the user starts (a form, a button): busy while it runs, its failure kept to show. */
export function useAction<A extends unknown[]>(work: (...args: A) => Promise<unknown>): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const ref = useRef(work);
  ref.current = work;
  const run = useCallback(async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await ref.current(...args);
      return true;
    } catch (e) {
      setError(e instanceof ApiError ? e : new ApiError({ status: 0, detail: (e as Error).message }));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: useCallback(() => setError(null), []) };
}

/** Calls `tick` every `ms` while the page is visible. */
export function useInterval(tick: () => void, ms: number | null): void {
  const ref = useRef(tick);
  ref.current = tick;
  useEffect(() => {
    if (ms === null) return;
    const id = setInterval(() => {
      if (document.visibilityState === 'visible') ref.current();
    }, ms);
    return () => clearInterval(id);
  }, [ms]);
}

/** Sets the document title: "<title> · Pier runner". */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Pier runner`;
  }, [title]);
}
