import { PageHeader } from '../components.js';
import { useTitle } from '../hooks.js';

export function RunPage() {
  useTitle('Run');
  return <PageHeader title="Run" />;
}
