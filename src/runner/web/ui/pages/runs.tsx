import { PageHeader } from '../components.js';
import { useTitle } from '../hooks.js';

export function RunsPage() {
  useTitle('Runs');
  return <PageHeader title="Runs" />;
}
