import { useRoute } from 'preact-iso';
import { useState } from 'preact/hooks';
import { api, download, withQuery } from '../api.js';
import { ErrorNote, Loading, PageHeader, Table, Time } from '../components.js';
import { formatBytes } from '../format.js';
import { useAction, useApi, useTitle } from '../hooks.js';
import { useGo } from '../navigation.js';
import { LoadMore, usePages } from '../paging.js';
import { useProjectAccess } from '../project-access.js';
import { StartRun } from '../run-form.js';
import { ScheduleForm } from '../schedule-form.js';
import { ScheduleTable } from '../schedule-list.js';
import type { ListedSchedule, Project, WorkflowDetails, WorkflowVersion } from '../types.js';
import { UploadForm } from '../upload-form.js';

function Versions(props: { workflow: WorkflowDetails }) {
  const fetchVersion = useAction((v: WorkflowVersion) => download(`/api/workflows/${encodeURIComponent(v.workflowId)}/versions/${v.version}/download`, v.fileName));
  return (
    <section class="card" aria-labelledby="versions-h">
      <h2 id="versions-h">Versions</h2>
      <ErrorNote error={fetchVersion.error} />
      <Table caption="Versions of the workflow" columns={['Version', 'File', 'Uploaded', 'By', { hidden: 'Download' }]}>
        {props.workflow.versions.map((v) => (
          <tr key={v.version}>
            <td>v{v.version}</td>
            <td>
              {v.fileName} <span class="meta">({formatBytes(v.size)})</span>
              <p class="meta mono" title="SHA-256">
                {v.sha256.slice(0, 12)}…
              </p>
            </td>
            <td>
              <Time iso={v.createdAt} />
            </td>
            <td>{v.createdBy ? v.createdBy.name || v.createdBy.email : <span class="muted">a deleted account</span>}</td>
            <td>
              <button type="button" class="secondary small" disabled={fetchVersion.busy} onClick={() => void fetchVersion.run(v)}>
                Download<span class="visually-hidden"> v{v.version}</span>
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

function Schedules(props: { workflow: WorkflowDetails; canWrite: boolean }) {
  // Paged like the Schedules page: the first page, then the next on "Load more".
  const { list, more, reload } = usePages<ListedSchedule>(withQuery('/api/schedules', { workflow: props.workflow.id }));
  const [creating, setCreating] = useState(false);
  return (
    <section class="card" aria-labelledby="schedules-h">
      <h2 id="schedules-h">Schedules</h2>
      <ErrorNote error={list.error} />
      {creating && (
        <ScheduleForm
          workflowId={props.workflow.id}
          versions={props.workflow.versions}
          onSaved={() => {
            setCreating(false);
            reload();
          }}
          onCancel={() => setCreating(false)}
        />
      )}
      {(list.items.length > 0 || (!list.loading && !list.error)) && (
        <ScheduleTable schedules={list.items} canWrite={() => props.canWrite} versions={props.workflow.versions} reload={reload} />
      )}
      <LoadMore list={list} more={more} what="schedules" />
      {props.canWrite && !creating && (
        <div class="buttons">
          <button type="button" class="secondary" onClick={() => setCreating(true)}>
            New schedule
          </button>
        </div>
      )}
    </section>
  );
}

function DeleteWorkflow(props: { workflow: WorkflowDetails }) {
  const go = useGo();
  const remove = useAction(async () => {
    if (!confirm(`Delete the workflow "${props.workflow.name}" with all its versions, runs, logs, outputs and schedules? This cannot be undone.`)) return;
    await api('DELETE', `/api/workflows/${encodeURIComponent(props.workflow.id)}`);
    go(`/projects/${props.workflow.projectId}`);
  });
  return (
    <section class="card" aria-labelledby="delete-wf-h">
      <h2 id="delete-wf-h">Delete the workflow</h2>
      <p>Removes every version and the workflow's runs, logs, outputs and schedules.</p>
      <ErrorNote error={remove.error} />
      <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run()}>
        Delete workflow
      </button>
    </section>
  );
}

export function WorkflowPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const workflow = useApi<WorkflowDetails>(`/api/workflows/${encodeURIComponent(id)}`);
  const projectId = workflow.data?.projectId ?? null;
  const [uploading, setUploading] = useState(false);
  useTitle(workflow.data?.name ?? 'Workflow');
  if (workflow.error) return <ErrorNote error={workflow.error} />;
  if (!workflow.data || projectId === null) return <Loading what="the workflow" />;
  return <Loaded workflow={workflow.data} reload={workflow.reload} uploading={uploading} setUploading={setUploading} />;
}

function Loaded(props: { workflow: WorkflowDetails; reload(): void; uploading: boolean; setUploading(v: boolean): void }) {
  const w = props.workflow;
  const access = useProjectAccess(w.projectId);
  const project = useApi<Project>(`/api/projects/${encodeURIComponent(w.projectId)}`);
  return (
    <>
      <p class="crumbs">
        <a href="/projects">Projects</a> / <a href={`/projects/${w.projectId}`}>{project.data?.name ?? 'Project'}</a> /
      </p>
      <PageHeader
        title={w.name}
        sub={w.description || undefined}
        actions={
          <>
            <a href={`/runs?workflow=${encodeURIComponent(w.id)}`}>Runs of this workflow</a>
            {access.canWrite && !props.uploading && (
              <button type="button" class="secondary" onClick={() => props.setUploading(true)}>
                Upload a new version
              </button>
            )}
          </>
        }
      />
      {props.uploading && (
        <UploadForm
          title="Upload a new version"
          action="Upload version"
          path={`/api/workflows/${encodeURIComponent(w.id)}/versions`}
          onDone={() => {
            props.setUploading(false);
            props.reload();
          }}
          onCancel={() => props.setUploading(false)}
        />
      )}
      {access.canWrite ? <StartRun workflow={w} /> : <p class="card hint">Viewers read runs and logs; editors and owners start runs.</p>}
      <Versions workflow={w} />
      <Schedules workflow={w} canWrite={access.canWrite} />
      {access.canWrite && <DeleteWorkflow workflow={w} />}
    </>
  );
}
