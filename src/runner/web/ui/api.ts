/**
 * The UI's only way to the server: the documented REST API with `Authorization: Bearer <JWT>`,
 * exactly as any other client. Failures arrive as RFC 9457 problem+json and become ApiError,
 * whose field problems the forms show next to their fields.
 */
import { currentSession, forgetSession } from './session.js';

export interface FieldProblem {
  field?: string;
  message: string;
  line?: number;
}

export interface Problem {
  status: number;
  code?: string;
  title?: string;
  detail?: string;
  errors?: FieldProblem[];
}

export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail || problem.title || `the server answered ${problem.status}`);
    this.name = 'ApiError';
  }

  get status(): number {
    return this.problem.status;
  }

  /** The problem with one field of a form (`field` as the API names it), if any. */
  forField(field: string): string | undefined {
    const hit = this.problem.errors?.find((e) => e.field === field || e.field === `/${field}` || e.field?.endsWith(`.${field}`));
    return hit?.message;
  }
}

let sessionLapsed: () => void = () => {};

/** What to do when the API says the session is no longer valid (expired, revoked). */
export function onSessionLapsed(handler: () => void): void {
  sessionLapsed = handler;
}

async function problemOf(res: Response): Promise<Problem> {
  try {
    const body = (await res.json()) as Partial<Problem>;
    return { ...body, status: res.status };
  } catch {
    return { status: res.status, detail: `the server answered ${res.status} ${res.statusText}` };
  }
}

function headers(json: boolean): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  const s = currentSession();
  if (s) h.authorization = `Bearer ${s.token}`;
  if (json) h['content-type'] = 'application/json';
  return h;
}

function lapsed(status: number, hadSession: boolean): void {
  if (status === 401 && hadSession) {
    forgetSession();
    sessionLapsed();
  }
}

export async function api<T>(method: string, path: string, body?: unknown, init: { signal?: AbortSignal } = {}): Promise<T> {
  const hadSession = currentSession() !== null;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: init.signal,
      credentials: 'same-origin',
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError({ status: 0, detail: 'the runner cannot be reached; check your connection and try again' });
  }
  if (!res.ok) {
    lapsed(res.status, hadSession);
    throw new ApiError(await problemOf(res));
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>('GET', path, undefined, { signal });

/** A path with its query string; empty and undefined values are left out. */
export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A GET with the session whose answer is read by the caller (a file, a stream); a failure is an ApiError. */
async function fetchOk(path: string, extra: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> {
  const hadSession = currentSession() !== null;
  const res = await fetch(path, { ...init, headers: { ...headers(false), ...extra } });
  if (!res.ok) {
    lapsed(res.status, hadSession);
    throw new ApiError(await problemOf(res));
  }
  return res;
}

/** Downloads a file the API serves (the JWT cannot go in a link): fetched, then saved. */
export async function download(path: string, fileName: string): Promise<void> {
  saveBlob(await (await fetchOk(path)).blob(), fileName);
}

/** A multipart upload with progress (fetch cannot report upload progress; XMLHttpRequest can). */
export function upload<T>(method: string, path: string, form: FormData, progress: (sent: number, total: number) => void, signal?: AbortSignal): Promise<T> {
  const hadSession = currentSession() !== null;
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    for (const [k, v] of Object.entries(headers(false))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => progress(e.loaded, e.total);
    xhr.onerror = () => reject(new ApiError({ status: 0, detail: 'the upload failed: the runner cannot be reached' }));
    xhr.onabort = () => reject(new DOMException('the upload was cancelled', 'AbortError'));
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(body as T);
      lapsed(xhr.status, hadSession);
      reject(new ApiError({ ...(body as Partial<Problem> | null), status: xhr.status }));
    };
    signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(form);
  });
}

/** Opens a streamed answer (Server-Sent Events) with the session's bearer token; a failure is an ApiError. */
export function openStream(path: string, extra: Record<string, string>, signal: AbortSignal): Promise<Response> {
  return fetchOk(path, { accept: 'text/event-stream', ...extra }, { signal, cache: 'no-store' });
}

/** Saves a Blob made in the page (an assembled log) as a file. */
export function saveBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
