import { useRoute } from 'preact-iso';
import { ErrorNote, Loading, PageHeader } from '../components.js';
import { formatBytes } from '../format.js';
import { useApi, useTitle } from '../hooks.js';
import { useProjectAccess } from '../project-access.js';
import type { Project } from '../types.js';
import { ProjectMembers } from './project-members.js';
import { ProjectSettings } from './project-settings.js';
import { ProjectWorkflows } from './project-workflows.js';

/** What the project's workflow archives take of its quota (the runner refuses uploads past it). */
function StorageLine(props: { storage: NonNullable<Project['storage']> }) {
  const { usedBytes, limitBytes } = props.storage;
  if (limitBytes === 0) return <p class="meta">Storage: {formatBytes(usedBytes)} (no limit)</p>;
  const full = usedBytes >= limitBytes * 0.9;
  return (
    <p class="meta">
      Storage: {formatBytes(usedBytes)} of {formatBytes(limitBytes)}
      {full ? ' — nearly full: delete workflows that are no longer needed to make room for uploads' : ''}
    </p>
  );
}

const TABS = [
  { id: 'workflows', text: 'Workflows' },
  { id: 'members', text: 'Members' },
  { id: 'settings', text: 'Settings' },
] as const;

export function ProjectPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const tab = TABS.find((t) => t.id === params.tab)?.id ?? 'workflows';
  const project = useApi<Project>(`/api/projects/${encodeURIComponent(id)}`);
  const access = useProjectAccess(id);
  useTitle(project.data ? `${project.data.name} · ${TABS.find((t) => t.id === tab)!.text}` : 'Project');
  if (project.error) return <ErrorNote error={project.error} />;
  if (!project.data) return <Loading what="the project" />;
  const base = `/projects/${encodeURIComponent(id)}`;
  return (
    <>
      <p class="crumbs">
        <a href="/projects">Projects</a> /
      </p>
      <PageHeader
        title={project.data.name}
        sub={project.data.description || undefined}
        actions={<a href={`/runs?project=${encodeURIComponent(id)}`}>Runs of this project</a>}
      />
      {project.data.storage ? <StorageLine storage={project.data.storage} /> : null}
      <nav class="tabs" aria-label="Project">
        {TABS.map((t) => (
          <a key={t.id} class="tab" href={t.id === 'workflows' ? base : `${base}/${t.id}`} aria-current={t.id === tab ? 'page' : undefined}>
            {t.text}
          </a>
        ))}
      </nav>
      {tab === 'workflows' && <ProjectWorkflows projectId={id} canWrite={access.canWrite} />}
      {tab === 'members' && <ProjectMembers projectId={id} access={access} />}
      {tab === 'settings' && <ProjectSettings project={project.data} canWrite={access.canWrite} canManage={access.canManage} onChange={project.reload} />}
    </>
  );
}
