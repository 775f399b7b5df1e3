/**
 * The names of the projects and workflows a user can see, for the runs list (a run names only
 * their ids). Read through GET /api/projects and GET /api/projects/{id}/workflows.
 */
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, get } from './api.js';
import type { ParameterValue, Project, Workflow } from './types.js';

export interface Names {
  projects: Project[];
  workflows: Workflow[];
  workflow: Map<string, Workflow>;
}

export function useNames(): { names: Names | null; error: ApiError | null } {
  const [names, setNames] = useState<Names | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    (async () => {
      const projects = (await get<{ items: Project[] }>('/api/projects', abort.signal)).items;
      const lists = await Promise.all(
        projects.map((p) => get<{ items: Workflow[] }>(`/api/projects/${encodeURIComponent(p.id)}/workflows`, abort.signal).then((r) => r.items, () => [] as Workflow[])),
      );
      const workflows = lists.flat().sort((a, b) => a.name.localeCompare(b.name));
      setNames({ projects, workflows, workflow: new Map(workflows.map((w) => [w.id, w])) });
    })().catch((e: unknown) => {
      if ((e as Error).name !== 'AbortError') setError(e as ApiError);
    });
    return () => abort.abort();
  }, []);
  return { names, error };
}

/** Parameters in one line: `rows=5, mode=fast`. */
export function formatParameters(p: Record<string, ParameterValue>): string {
  return Object.entries(p)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(', ');
}
