import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useGo } from '../navigation.js';
import { Empty, ErrorNote, Loading, PageHeader, TextField, Time } from '../components.js';
import { useAction, useApi, useTitle } from '../hooks.js';
import { MyInvitations } from '../my-invitations.js';
import type { Project } from '../types.js';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function CreateProject(props: { onCancel(): void }) {
  const go = useGo();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const create = useAction(async () => {
    const p = await api<Project>('POST', '/api/projects', { name, ...(description ? { description } : {}) });
    go(`/projects/${p.id}`);
  });
  return (
    <form
      class="card"
      aria-label="New project"
      onSubmit={(e) => {
        e.preventDefault();
        void create.run();
      }}
    >
      <h2>New project</h2>
      <ErrorNote error={create.error} placed={['name', 'description']} />
      <TextField label="Name" name="name" required maxLength={200} value={name} onInput={setName} error={create.error?.forField('name')} />
      <TextField label="Description" name="description" value={description} onInput={setDescription} error={create.error?.forField('description')} />
      <div class="buttons">
        <button type="submit" disabled={create.busy}>
          Create project
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function ProjectsPage() {
  useTitle('Projects');
  const projects = useApi<{ items: Project[] }>('/api/projects');
  const [creating, setCreating] = useState(false);
  return (
    <>
      <PageHeader
        title="Projects"
        sub="Workflows, their runs and schedules live in projects; members are owners, editors or viewers."
        actions={
          !creating && (
            <button type="button" onClick={() => setCreating(true)}>
              New project
            </button>
          )
        }
      />
      <MyInvitations onJoined={projects.reload} />
      {creating && <CreateProject onCancel={() => setCreating(false)} />}
      <ErrorNote error={projects.error} />
      {projects.loading && !projects.data ? <Loading what="projects" /> : null}
      {projects.data && projects.data.items.length === 0 ? <Empty>No projects yet. Create one to upload a workflow.</Empty> : null}
      {projects.data && projects.data.items.length > 0 ? (
        <ul class="cards">
          {projects.data.items.map((p) => (
            <li key={p.id} class="card project">
              <h2>
                <a href={`/projects/${p.id}`}>{p.name}</a>
              </h2>
              {p.description ? <p>{p.description}</p> : null}
              {p.counts && (
                <p class="meta">
                  {plural(p.counts.workflows, 'workflow')} · {plural(p.counts.runs, 'run')} · {plural(p.counts.members, 'member')}
                </p>
              )}
              <p class="meta">
                {p.role ? `You are ${p.role === 'viewer' ? 'a' : 'an'} ${p.role}` : 'Administrator access'} · changed <Time iso={p.updatedAt} />
              </p>
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}
