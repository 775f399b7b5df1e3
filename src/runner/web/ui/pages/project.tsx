import { useRoute } from 'preact-iso';
import { ErrorNote, Loading, PageHeader } from '../components.js';
import { useApi, useTitle } from '../hooks.js';
import type { Project } from '../types.js';

export function ProjectPage() {
  const { params } = useRoute();
  const project = useApi<Project>(`/api/projects/${encodeURIComponent(params.id ?? '')}`);
  useTitle(project.data?.name ?? 'Project');
  if (project.error) return <ErrorNote error={project.error} />;
  if (!project.data) return <Loading what="the project" />;
  return <PageHeader title={project.data.name} sub={project.data.description || undefined} />;
}
