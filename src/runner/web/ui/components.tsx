import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiError } from './api.js';
import { formatTime, fromNow } from './format.js';
import type { RunStatus } from './types.js';

/** A failure the API reported, in words; field problems a form did not place are listed. */
export function ErrorNote(props: { error: ApiError | null; placed?: string[]; id?: string }) {
  if (!props.error) return null;
  const detail = props.error.message;
  const rest = (props.error.problem.errors ?? []).filter(
    (e) => !props.placed?.some((f) => e.field === f || e.field === `/${f}`) && `${e.field ?? ''} ${e.message}`.trim() !== detail && e.message !== detail,
  );
  return (
    <div class="alert error" role="alert" id={props.id}>
      <p>{detail}</p>
      {rest.length > 0 && (
        <ul>
          {rest.map((e) => (
            <li key={`${e.field}:${e.message}`}>
              {e.field ? <code>{e.field}</code> : null} {e.message}
              {e.line ? ` (line ${e.line})` : ''}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

let fieldIds = 0;

/** A labelled field with its hint and its problem (announced to screen readers). */
export function Field(props: { label: string; error?: string | undefined; hint?: ComponentChildren; children: (id: string, describedBy: string | undefined) => ComponentChildren }) {
  const [id] = useState(() => `f${++fieldIds}`);
  const describedBy = [props.hint ? `${id}-hint` : '', props.error ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={id}>{props.label}</label>
      {props.children(id, describedBy)}
      {props.hint ? (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      ) : null}
      {props.error ? (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      ) : null}
    </div>
  );
}

export function TextField(
  props: { label: string; value: string; onInput: (v: string) => void; error?: string | undefined; hint?: ComponentChildren } & Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'value' | 'onInput' | 'label'>,
) {
  const { label, value, onInput, error, hint, ...rest } = props;
  return (
    <Field label={label} error={error} hint={hint}>
      {(id, describedBy) => (
        <input
          {...rest}
          id={id}
          value={value}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={describedBy}
          onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)}
        />
      )}
    </Field>
  );
}

/** A time in the user's time zone: relative, with the full date and time on hover. */
export function Time(props: { iso: string | null | undefined }) {
  if (!props.iso) return <span class="muted">—</span>;
  return (
    <time dateTime={props.iso} title={formatTime(props.iso)}>
      {fromNow(props.iso)}
    </time>
  );
}

const STATUS_TEXT: Record<RunStatus, string> = {
  queued: 'Queued',
  running: 'Running',
  cancelling: 'Cancelling',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

export function StatusBadge(props: { status: RunStatus }) {
  return <span class={`badge status-${props.status}`}>{STATUS_TEXT[props.status] ?? props.status}</span>;
}

export function Loading(props: { what?: string }) {
  return (
    <p class="muted" role="status">
      Loading{props.what ? ` ${props.what}` : ''}…
    </p>
  );
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

export function PageHeader(props: { title: string; sub?: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <header class="page-header">
      <div>
        <h1>{props.title}</h1>
        {props.sub ? <p class="sub">{props.sub}</p> : null}
      </div>
      {props.actions ? <div class="actions">{props.actions}</div> : null}
    </header>
  );
}

/** Copies `text` to the clipboard, saying so. */
export function CopyButton(props: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(props.text);
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? 'Copied' : (props.label ?? 'Copy')}
    </button>
  );
}

/** A column header: its text, or one named for screen readers only (an actions column). */
export type Column = string | { hidden: string };

/** A table that scrolls sideways inside its own box on narrow screens; rows are the children. */
export function Table(props: { caption?: string; columns: Column[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table>
        {props.caption ? <caption class="visually-hidden">{props.caption}</caption> : null}
        <thead>
          <tr>
            {props.columns.map((c) =>
              typeof c === 'string' ? (
                <th scope="col" key={c}>
                  {c}
                </th>
              ) : (
                <th scope="col" key={c.hidden}>
                  <span class="visually-hidden">{c.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
