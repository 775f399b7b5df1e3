import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ErrorNote, Time } from './components.js';
import { useAction, useApi } from './hooks.js';
import type { Invitation, MemberRole } from './types.js';

/**
 * Invitations to the signed-in account's address, where it lands after signing in: each can be
 * accepted (the account joins the project) or declined. Nothing shows while none waits.
 */
export function MyInvitations(props: { onJoined(): void }) {
  const invitations = useApi<{ items: Invitation[] }>('/api/me/invitations');
  const [joined, setJoined] = useState<{ projectId: string; name: string; role: MemberRole } | null>(null);
  const accept = useAction(async (i: Invitation) => {
    const r = await api<{ projectId: string; role: MemberRole }>('POST', `/api/me/invitations/${encodeURIComponent(i.id)}/accept`);
    setJoined({ projectId: r.projectId, name: i.projectName, role: r.role });
    invitations.reload();
    props.onJoined();
  });
  const decline = useAction(async (i: Invitation) => {
    await api('DELETE', `/api/me/invitations/${encodeURIComponent(i.id)}`);
    invitations.reload();
  });
  const items = invitations.data?.items ?? [];
  if (items.length === 0 && !joined && !accept.error && !decline.error) return null;
  return (
    <section class="card" aria-labelledby="invitations-h">
      <h2 id="invitations-h">Invitations</h2>
      <ErrorNote error={invitations.error ?? accept.error ?? decline.error} />
      {joined && (
        <p class="alert ok" role="status">
          You joined <a href={`/projects/${joined.projectId}`}>{joined.name}</a> as {joined.role}.
        </p>
      )}
      <ul class="plain">
        {items.map((i) => (
          <li key={i.id}>
            <p>
              <strong>{i.projectName}</strong> as {i.role}
              {i.invitedBy ? `, from ${i.invitedBy.name} (${i.invitedBy.email})` : ''} · <Time iso={i.createdAt} />
            </p>
            <div class="buttons">
              <button type="button" class="small" disabled={accept.busy || decline.busy} onClick={() => void accept.run(i)}>
                Accept<span class="visually-hidden"> the invitation to {i.projectName}</span>
              </button>
              <button type="button" class="secondary small" disabled={accept.busy || decline.busy} onClick={() => void decline.run(i)}>
                Decline<span class="visually-hidden"> the invitation to {i.projectName}</span>
              </button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
