import { ErrorNote, Loading, PageHeader } from '../components.js';
import { useApi, useTitle } from '../hooks.js';
import { ScheduleTable } from '../schedule-list.js';
import type { ListedSchedule, Project, Schedule } from '../types.js';
import { useAuth } from '../auth.js';

export function SchedulesPage() {
  useTitle('Schedules');
  const { me } = useAuth();
  const schedules = useApi<{ items: ListedSchedule[] }>('/api/schedules');
  const projects = useApi<{ items: Project[] }>('/api/projects');
  const canWrite = (s: Schedule) => me.role === 'admin' || ['owner', 'editor'].includes(projects.data?.items.find((p) => p.id === s.projectId)?.role ?? '');
  return (
    <>
      <PageHeader title="Schedules" sub="Every schedule of your projects. Create one from its workflow's page." />
      <ErrorNote error={schedules.error} />
      {schedules.loading && !schedules.data ? <Loading what="schedules" /> : null}
      {schedules.data && (
        <section class="card" aria-label="All schedules">
          <ScheduleTable schedules={schedules.data.items} canWrite={canWrite} showWorkflow reload={schedules.reload} />
        </section>
      )}
    </>
  );
}
