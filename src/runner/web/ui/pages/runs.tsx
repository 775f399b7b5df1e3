import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { withQuery } from '../api.js';
import { Empty, ErrorNote, Field, Loading, PageHeader } from '../components.js';
import { useApi, useTitle } from '../hooks.js';
import { LoadMore, usePages } from '../paging.js';
import { RerunForm } from '../rerun.js';
import { type Names, useNames } from '../run-names.js';
import { RunRow } from '../run-row.js';
import type { ListedSchedule, Page, Run, RunStatus } from '../types.js';

const STATUSES: RunStatus[] = ['queued', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled'];
/** The filters GET /api/runs takes, kept in the address so a reload or a shared link keeps them. */
const FILTERS = ['status', 'project', 'workflow', 'schedule', 'startedBy', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

function Select(props: { label: string; value: string; onChange(v: string): void; children: ComponentChildren }) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange((e.currentTarget as HTMLSelectElement).value)}>
          {props.children}
        </select>
      )}
    </Field>
  );
}

/** A day in the user's calendar; the API gets the instant that day starts in their time zone. */
function DateField(props: { label: string; value: string; onChange(v: string): void }) {
  const day = props.value ? localDay(props.value) : '';
  return (
    <Field label={props.label}>
      {(id) => <input id={id} type="date" value={day} onChange={(e) => {
        const v = (e.currentTarget as HTMLInputElement).value;
        props.onChange(v ? new Date(`${v}T00:00`).toISOString() : '');
      }} />}
    </Field>
  );
}

function localDay(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

function FilterBar(props: { filters: Filters; names: Names | null; schedules: Page<ListedSchedule> | null; set(f: Filters): void }) {
  const { filters, names } = props;
  const workflows = (names?.workflows ?? []).filter((w) => !filters.project || w.projectId === filters.project);
  return (
    <form class="inline-form filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
      <Select label="Status" value={filters.status ?? ''} onChange={(status) => props.set({ ...filters, status })}>
        <option value="">Any status</option>
        {STATUSES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </Select>
      <Select label="Project" value={filters.project ?? ''} onChange={(project) => props.set({ ...filters, project, workflow: '' })}>
        <option value="">Any project</option>
        {names?.projects.map((p) => (
          <option key={p.id} value={p.id}>
            {p.name}
          </option>
        ))}
      </Select>
      <Select label="Workflow" value={filters.workflow ?? ''} onChange={(workflow) => props.set({ ...filters, workflow })}>
        <option value="">Any workflow</option>
        {workflows.map((w) => (
          <option key={w.id} value={w.id}>
            {w.name}
          </option>
        ))}
      </Select>
      <Select label="Schedule" value={filters.schedule ?? ''} onChange={(schedule) => props.set({ ...filters, schedule })}>
        <option value="">Any schedule or none</option>
        {props.schedules?.items.map((s) => (
          <option key={s.id} value={s.id}>
            {s.workflowName}: {s.name || s.cron}
          </option>
        ))}
        {filters.schedule && !props.schedules?.items.some((s) => s.id === filters.schedule) ? <option value={filters.schedule}>{filters.schedule}</option> : null}
        {props.schedules?.nextCursor ? (
          <option value="" disabled>
            More schedules: choose a project or workflow first
          </option>
        ) : null}
      </Select>
      <Select label="Started by" value={filters.startedBy ?? ''} onChange={(startedBy) => props.set({ ...filters, startedBy })}>
        <option value="">Anyone</option>
        <option value="me">Me</option>
      </Select>
      <DateField label="Queued from" value={filters.since ?? ''} onChange={(since) => props.set({ ...filters, since })} />
      <DateField label="Queued before" value={filters.until ?? ''} onChange={(until) => props.set({ ...filters, until })} />
      {FILTERS.some((f) => filters[f]) && (
        <button type="button" class="secondary" onClick={() => props.set({})}>
          Clear filters
        </button>
      )}
    </form>
  );
}

export function RunsPage() {
  useTitle('Runs');
  const { query, path, route } = useLocation();
  const filters: Filters = {};
  for (const f of FILTERS) if (query[f]) filters[f] = query[f];
  const { names, error: namesError } = useNames();
  // One page of the schedules the filter offers (the largest), narrowed by the project or
  // workflow chosen; a schedule chosen from a link but beyond that page is offered by its id.
  const schedules = useApi<Page<ListedSchedule>>(withQuery('/api/schedules', { project: filters.project, workflow: filters.workflow, limit: 200 }));
  const [tick, setTick] = useState(0);
  const { list, more } = usePages<Run>(withQuery('/api/runs', { ...filters }), tick);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [rerunning, setRerunning] = useState(false);
  const [started, setStarted] = useState<Run[]>([]);

  const setFilters = (f: Filters) => {
    setSelected(new Set());
    route(withQuery(path, f), true);
  };
  const select = (id: string, on: boolean) =>
    setSelected((s) => {
      const n = new Set(s);
      if (on) n.add(id);
      else n.delete(id);
      return n;
    });
  const chosen = list.items.filter((r) => selected.has(r.id));
  const failed = list.items.filter((r) => r.status === 'failed');

  return (
    <>
      <PageHeader title="Runs" sub="Newest first. Select runs to start them again." />
      <FilterBar filters={filters} names={names} schedules={schedules.data} set={setFilters} />
      <ErrorNote error={list.error ?? namesError} />
      {started.length > 0 && (
        <div class="alert ok" role="status">
          <p>
            Started {started.length === 1 ? 'a run' : `${started.length} runs`}:{' '}
            {started.map((r, i) => (
              <span key={r.id}>
                {i > 0 ? ', ' : ''}
                <a href={`/runs/${r.id}`}>{r.id}</a>
              </span>
            ))}
          </p>
        </div>
      )}
      <div class="buttons selection">
        <button type="button" class="secondary small" disabled={failed.length === 0} onClick={() => setSelected(new Set(failed.map((r) => r.id)))}>
          Select failed runs
        </button>
        <button type="button" class="small" disabled={chosen.length === 0} onClick={() => setRerunning(true)}>
          Re-run selected{chosen.length ? ` (${chosen.length})` : ''}
        </button>
        {chosen.length > 0 && (
          <button type="button" class="link" onClick={() => setSelected(new Set())}>
            Clear selection
          </button>
        )}
      </div>
      {rerunning && chosen.length > 0 && (
        <RerunForm
          runs={chosen}
          onCancel={() => setRerunning(false)}
          onDone={(runs) => {
            setStarted(runs);
            setSelected(new Set());
            setRerunning(false);
            setTick((t) => t + 1);
          }}
        />
      )}
      {list.loading && list.items.length === 0 ? <Loading what="runs" /> : null}
      {!list.loading && !list.error && list.items.length === 0 ? <Empty>No runs{FILTERS.some((f) => filters[f]) ? ' match these filters' : ' yet'}.</Empty> : null}
      {list.items.length > 0 && (
        <ul class="run-list" aria-label="Runs">
          {list.items.map((r) => (
            <RunRow key={r.id} run={r} workflow={names?.workflow.get(r.workflowId)} selected={selected.has(r.id)} onSelect={(on) => select(r.id, on)} />
          ))}
        </ul>
      )}
      <LoadMore list={list} more={more} what="runs" />
    </>
  );
}
