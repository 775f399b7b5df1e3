import { useState } from 'preact/hooks';
import { Empty, ErrorNote, Loading, Table, TextField, Time } from '../components.js';
import { useApi } from '../hooks.js';
import { useGo } from '../navigation.js';
import type { Workflow, WorkflowDetails } from '../types.js';
import { UploadForm } from '../upload-form.js';

function NewWorkflow(props: { projectId: string; onCancel(): void }) {
  const go = useGo();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  return (
    <UploadForm<WorkflowDetails>
      title="Upload a workflow"
      action="Upload"
      path={`/api/projects/${encodeURIComponent(props.projectId)}/workflows`}
      extra={() => ({ name: name.trim(), description })}
      onDone={(w) => go(`/workflows/${w.id}`)}
      onCancel={props.onCancel}
    >
      <TextField label="Name" name="name" maxLength={200} hint="Leave empty to use the file name." value={name} onInput={setName} />
      <TextField label="Description" name="description" maxLength={10000} value={description} onInput={setDescription} />
    </UploadForm>
  );
}

export function ProjectWorkflows(props: { projectId: string; canWrite: boolean }) {
  const workflows = useApi<{ items: Workflow[] }>(`/api/projects/${encodeURIComponent(props.projectId)}/workflows`);
  const [adding, setAdding] = useState(false);
  const items = workflows.data?.items ?? [];
  return (
    <section aria-label="Workflows">
      {props.canWrite && !adding && (
        <div class="buttons section-actions">
          <button type="button" onClick={() => setAdding(true)}>
            Upload a workflow
          </button>
        </div>
      )}
      {adding && <NewWorkflow projectId={props.projectId} onCancel={() => setAdding(false)} />}
      <ErrorNote error={workflows.error} />
      {workflows.loading && !workflows.data ? <Loading what="workflows" /> : null}
      {workflows.data && items.length === 0 ? (
        <Empty>{props.canWrite ? 'No workflows yet. Upload a .knwf exported from the platform.' : 'No workflows yet.'}</Empty>
      ) : null}
      {items.length > 0 && (
        <Table caption="Workflows of the project" columns={['Workflow', 'Latest version', 'Changed']}>
          {items.map((w) => (
            <tr key={w.id}>
              <td>
                <a href={`/workflows/${w.id}`}>{w.name}</a>
                {w.description ? <p class="meta">{w.description}</p> : null}
              </td>
              <td>v{w.latestVersion}</td>
              <td>
                <Time iso={w.updatedAt} />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
