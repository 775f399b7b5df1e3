import { type ComponentChildren, cloneElement, isValidElement, type JSX, toChildArray } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiError } from './api.js';
import { formatTime, fromNow } from './format.js';
import type { RunStatus } from './types.js';

/** A failure the API reported, in words; field problems a form did not place are listed. */
export function ErrorNote(props: { error: ApiError | null; placed?: string[]; id?: string }) {
  if (!props.error) return null;
  const detail = props.error.message;
  // A problem the detail already states (the API joins them into it) is not listed again.
  const rest = (props.error.problem.errors ?? []).filter(
    (e) => !props.placed?.some((f) => e.field === f || e.field === `/${f}`) && e.message !== detail && !detail.includes(`${e.field ?? ''} ${e.message}`.trim()),
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

const columnName = (c: Column) => (typeof c === 'string' ? c : '');

/**
 * Each cell of a row with its column's name as `data-label`: on a phone the rows reflow into
 * blocks that show the name beside each value (app.css), since a table wider than the screen
 * hides its last columns. The roles (ROLES) keep it a table to screen readers whatever its display.
 */
function labelled(row: ComponentChildren, columns: Column[]): ComponentChildren {
  if (!isValidElement(row)) return row;
  const cells = toChildArray((row.props as { children?: ComponentChildren }).children).map((cell, i) =>
    isValidElement(cell) ? cloneElement(cell, { 'data-label': columnName(columns[i] ?? ''), role: cell.type === 'th' ? 'rowheader' : 'cell' } as Record<string, unknown>) : cell,
  );
  return cloneElement(row, { role: 'row' } as Record<string, unknown>, ...cells);
}

/**
 * The roles a table's parts imply, stated: on a phone they are laid out as blocks (app.css), and
 * Chromium drops the implied roles of table parts whose display is changed.
 */
const ROLES = { table: { role: 'table' }, rowgroup: { role: 'rowgroup' }, row: { role: 'row' }, columnheader: { role: 'columnheader' } } as const;

/** A table whose rows reflow into labelled blocks on narrow screens; rows are the children. */
export function Table(props: { caption?: string; columns: Column[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table {...ROLES.table}>
        {props.caption ? <caption class="visually-hidden">{props.caption}</caption> : null}
        <thead {...ROLES.rowgroup}>
          <tr {...ROLES.row}>
            {props.columns.map((c) =>
              typeof c === 'string' ? (
                <th scope="col" {...ROLES.columnheader} key={c}>
                  {c}
                </th>
              ) : (
                <th scope="col" {...ROLES.columnheader} key={c.hidden}>
                  <span class="visually-hidden">{c.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody {...ROLES.rowgroup}>{toChildArray(props.children).map((row) => labelled(row, props.columns))}</tbody>
      </table>
    </div>
  );
}
