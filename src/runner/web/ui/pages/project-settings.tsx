import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorNote, TextField } from '../components.js';
import { useAction, useApi } from '../hooks.js';
import { useGo } from '../navigation.js';
import type { Project, Workflow } from '../types.js';

function DeleteProject(props: { project: Project }) {
  const go = useGo();
  const workflows = useApi<{ items: Workflow[] }>(`/api/projects/${encodeURIComponent(props.project.id)}/workflows`);
  const remove = useAction(async () => {
    if (!confirm(`Delete the project "${props.project.name}"? This cannot be undone.`)) return;
    await api('DELETE', `/api/projects/${encodeURIComponent(props.project.id)}`);
    go('/projects');
  });
  const count = workflows.data?.items.length ?? null;
  return (
    <section class="card" aria-labelledby="delete-h">
      <h2 id="delete-h">Delete the project</h2>
      <ErrorNote error={workflows.error ?? remove.error} />
      {count !== null && count > 0 ? (
        <p>
          The project still holds {count === 1 ? 'one workflow' : `${count} workflows`}, with their runs and schedules. Delete them first, from each workflow's
          page; an empty project can be deleted here.
        </p>
      ) : (
        <p>The project is empty. Deleting it removes its members' access.</p>
      )}
      <div class="buttons">
        <button type="button" class="danger" disabled={count !== 0 || remove.busy} onClick={() => void remove.run()}>
          Delete project
        </button>
      </div>
    </section>
  );
}

export function ProjectSettings(props: { project: Project; canWrite: boolean; canManage: boolean; onChange(): void }) {
  const [name, setName] = useState(props.project.name);
  const [description, setDescription] = useState(props.project.description);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    await api<Project>('PATCH', `/api/projects/${encodeURIComponent(props.project.id)}`, { name: name.trim(), description });
    setSaved(true);
    props.onChange();
  });
  return (
    <>
      <form
        class="card"
        aria-labelledby="about-h"
        onSubmit={(e) => {
          e.preventDefault();
          void save.run();
        }}
      >
        <h2 id="about-h">About</h2>
        <ErrorNote error={save.error} placed={['name', 'description']} />
        <TextField label="Name" name="name" required maxLength={200} disabled={!props.canWrite} value={name} onInput={setName} error={save.error?.forField('name')} />
        <TextField label="Description" name="description" disabled={!props.canWrite} value={description} onInput={setDescription} error={save.error?.forField('description')} />
        {props.canWrite && (
          <div class="buttons">
            <button type="submit" disabled={save.busy}>
              Save
            </button>
            {saved && <span role="status">Saved.</span>}
          </div>
        )}
      </form>
      {props.canManage ? <DeleteProject project={props.project} /> : <p class="hint">Only owners can delete the project.</p>}
    </>
  );
}
