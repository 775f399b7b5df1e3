import type { ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { ApiError, upload } from './api.js';
import { ErrorNote, Field } from './components.js';
import { formatBytes } from './format.js';

/**
 * A `.knwf` upload with a progress bar and a Cancel button; `extra` adds text parts (name,
 * description). The server's limits and problems are shown as it reports them.
 */
export function UploadForm<T>(props: {
  title: string;
  action: string;
  path: string;
  extra?: () => Record<string, string>;
  children?: ComponentChildren;
  onDone(answer: T): void;
  onCancel?(): void;
}) {
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const abort = useRef<AbortController | null>(null);
  const submit = async () => {
    if (!file) {
      setError(new ApiError({ status: 0, detail: 'choose a .knwf file first', errors: [{ field: 'file', message: 'choose a .knwf file' }] }));
      return;
    }
    const form = new FormData();
    for (const [k, v] of Object.entries(props.extra?.() ?? {})) if (v !== '') form.append(k, v);
    form.append('file', file, file.name);
    setError(null);
    setProgress({ sent: 0, total: file.size });
    abort.current = new AbortController();
    try {
      const answer = await upload<T>('POST', props.path, form, (sent, total) => setProgress({ sent, total }), abort.current.signal);
      setFile(null);
      props.onDone(answer);
    } catch (e) {
      if ((e as Error).name !== 'AbortError') setError(e instanceof ApiError ? e : new ApiError({ status: 0, detail: (e as Error).message }));
    } finally {
      setProgress(null);
      abort.current = null;
    }
  };
  const busy = progress !== null;
  return (
    <form
      class="card"
      aria-label={props.title}
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <h2>{props.title}</h2>
      <ErrorNote error={error} placed={['file', 'name', 'description']} />
      {props.children}
      <Field label="Workflow archive (.knwf)" error={error?.forField('file')} hint="A workflow exported from the platform: a zip file.">
        {(id, describedBy) => (
          <input
            id={id}
            type="file"
            accept=".knwf,application/zip"
            required
            aria-describedby={describedBy}
            onChange={(e) => setFile((e.currentTarget as HTMLInputElement).files?.[0] ?? null)}
          />
        )}
      </Field>
      {progress && (
        <p>
          <progress max={progress.total || 1} value={progress.sent} aria-label="Upload progress" /> {formatBytes(progress.sent)} of {formatBytes(progress.total)}
        </p>
      )}
      <div class="buttons">
        <button type="submit" disabled={busy}>
          {props.action}
        </button>
        {busy ? (
          <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
            Cancel upload
          </button>
        ) : (
          props.onCancel && (
            <button type="button" class="secondary" onClick={props.onCancel}>
              Cancel
            </button>
          )
        )}
      </div>
    </form>
  );
}
