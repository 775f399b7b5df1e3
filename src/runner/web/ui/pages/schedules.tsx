import { ErrorNote, Loading, PageHeader } from '../components.js';
import { useApi, useTitle } from '../hooks.js';
import { LoadMore, usePages } from '../paging.js';
import { ScheduleTable } from '../schedule-list.js';
import type { ListedSchedule, Project, Schedule } from '../types.js';
import { useAuth } from '../auth.js';

export function SchedulesPage() {
  useTitle('Schedules');
  const { me } = useAuth();
  // GET /api/schedules is paged: the first page, then the next on "Load more".
  const { list, more, reload } = usePages<ListedSchedule>('/api/schedules');
  const projects = useApi<{ items: Project[] }>('/api/projects');
  const canWrite = (s: Schedule) => me.role === 'admin' || ['owner', 'editor'].includes(projects.data?.items.find((p) => p.id === s.projectId)?.role ?? '');
  const loaded = list.items.length > 0 || (!list.loading && !list.error);
  return (
    <>
      <PageHeader title="Schedules" sub="Every schedule of your projects, oldest first. Create one from its workflow's page." />
      <ErrorNote error={list.error} />
      {list.loading && list.items.length === 0 ? <Loading what="schedules" /> : null}
      {loaded && (
        <section class="card" aria-label="All schedules">
          <ScheduleTable schedules={list.items} canWrite={canWrite} showWorkflow reload={reload} />
          <LoadMore list={list} more={more} what="schedules" />
        </section>
      )}
    </>
  );
}
