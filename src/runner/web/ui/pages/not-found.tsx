import { PageHeader } from '../components.js';
import { useTitle } from '../hooks.js';

export function NotFoundPage() {
  useTitle('Not found');
  return (
    <>
      <PageHeader title="Not found" />
      <p>
        There is no page at this address. Go to your <a href="/projects">projects</a>.
      </p>
    </>
  );
}
