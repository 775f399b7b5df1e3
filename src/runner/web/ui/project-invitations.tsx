import { api } from './api.js';
import { Empty, ErrorNote, Table, Time } from './components.js';
import { useAction, type Loaded } from './hooks.js';
import type { Invitation } from './types.js';

/**
 * A project's pending invitations, for its owners: the address shows masked (the runner keeps
 * only its hash), with the role, who invited and until when; an owner withdraws one.
 */
export function ProjectInvitations(props: { projectId: string; invitations: Loaded<{ items: Invitation[] }> }) {
  const { invitations } = props;
  const withdraw = useAction(async (i: Invitation) => {
    await api('DELETE', `/api/projects/${encodeURIComponent(props.projectId)}/invitations/${encodeURIComponent(i.id)}`);
    invitations.reload();
  });
  const items = invitations.data?.items ?? [];
  return (
    <section aria-label="Pending invitations">
      <h3>Pending invitations</h3>
      <ErrorNote error={invitations.error ?? withdraw.error} />
      {invitations.data && items.length === 0 ? <Empty>No invitation waits.</Empty> : null}
      {items.length > 0 && (
        <Table caption="Pending invitations" columns={['Address', 'Role', 'Invited', 'Expires', { hidden: 'Actions' }]}>
          {items.map((i) => (
            <tr key={i.id}>
              <td>
                {i.emailHint}
                {i.invitedBy ? <p class="meta">by {i.invitedBy.name || i.invitedBy.email}</p> : null}
              </td>
              <td>{i.role}</td>
              <td>
                <Time iso={i.createdAt} />
              </td>
              <td>
                <Time iso={i.expiresAt} />
              </td>
              <td>
                <button type="button" class="secondary small" disabled={withdraw.busy} onClick={() => void withdraw.run(i)}>
                  Withdraw<span class="visually-hidden"> the invitation of {i.emailHint}</span>
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
