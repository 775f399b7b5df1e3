import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAuth } from '../auth.js';
import { ErrorNote, Field, Loading, Table, TextField, Time } from '../components.js';
import { useAction, useApi } from '../hooks.js';
import type { ProjectAccess } from '../project-access.js';
import { ProjectInvitations } from '../project-invitations.js';
import type { Invitation, Member, MemberRole } from '../types.js';

const ROLES: { id: MemberRole; text: string; what: string }[] = [
  { id: 'owner', text: 'Owner', what: 'manages members and can delete the project' },
  { id: 'editor', text: 'Editor', what: 'uploads workflows, starts runs, edits schedules' },
  { id: 'viewer', text: 'Viewer', what: 'reads workflows, runs and logs' },
];

function RoleSelect(props: { value: MemberRole; label: string; disabled?: boolean; onChange(role: MemberRole): void }) {
  return (
    <select aria-label={props.label} value={props.value} disabled={props.disabled} onChange={(e) => props.onChange((e.currentTarget as HTMLSelectElement).value as MemberRole)}>
      {ROLES.map((r) => (
        <option key={r.id} value={r.id}>
          {r.text}
        </option>
      ))}
    </select>
  );
}

/**
 * Invites an address. A member's address changes their role at once (the answer is the member);
 * any other is invited, whether or not an account has it (the answer is the invitation).
 */
function InviteMember(props: { projectId: string; onAdded(): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<MemberRole>('viewer');
  const [done, setDone] = useState('');
  const add = useAction(async () => {
    setDone('');
    const added = await api<Member | Invitation>('POST', `/api/projects/${encodeURIComponent(props.projectId)}/members`, { email: email.trim(), role });
    setDone(
      'userId' in added
        ? `${added.email} is now ${added.role}.`
        : `Invited ${email.trim()} as ${added.role}: the account with this address sees the invitation when signed in, and accepts or declines it.`,
    );
    setEmail('');
    props.onAdded();
  });
  return (
    <form
      class="inline-form"
      aria-label="Invite someone"
      onSubmit={(e) => {
        e.preventDefault();
        void add.run();
      }}
    >
      <ErrorNote error={add.error} placed={['email', 'role']} />
      <TextField label="Email of the person to invite" type="email" name="email" required value={email} onInput={setEmail} error={add.error?.forField('email')} />
      <Field label="Role">{(id) => <select id={id} value={role} onChange={(e) => setRole((e.currentTarget as HTMLSelectElement).value as MemberRole)}>{ROLES.map((r) => <option key={r.id} value={r.id}>{r.text}</option>)}</select>}</Field>
      <button type="submit" disabled={add.busy}>
        Invite
      </button>
      {done && (
        <p class="meta" role="status">
          {done}
        </p>
      )}
    </form>
  );
}

export function ProjectMembers(props: { projectId: string; access: ProjectAccess }) {
  const { me } = useAuth();
  const { members, canManage } = props.access;
  const base = `/api/projects/${encodeURIComponent(props.projectId)}/members`;
  const invitations = useApi<{ items: Invitation[] }>(canManage ? `/api/projects/${encodeURIComponent(props.projectId)}/invitations` : null);
  const change = useAction(async (m: Member, role: MemberRole) => {
    try {
      await api<Member>('PUT', `${base}/${encodeURIComponent(m.userId)}`, { role });
    } finally {
      // Refused or not, the list shows the roles as stored (a refused change puts the old one back).
      members.reload();
    }
  });
  const remove = useAction(async (m: Member) => {
    const who = m.userId === me.id ? 'yourself' : m.email;
    if (!confirm(`Remove ${who} from the project?`)) return;
    await api('DELETE', `${base}/${encodeURIComponent(m.userId)}`);
    members.reload();
  });
  const items = members.data?.items ?? [];
  return (
    <section aria-label="Members" class="card">
      <h2>Members</h2>
      <ul class="meta plain">
        {ROLES.map((r) => (
          <li key={r.id}>
            <strong>{r.text}</strong>: {r.what}
          </li>
        ))}
      </ul>
      {canManage && (
        <InviteMember
          projectId={props.projectId}
          onAdded={() => {
            members.reload();
            invitations.reload();
          }}
        />
      )}
      <ErrorNote error={members.error ?? change.error ?? remove.error} />
      {members.loading && !members.data ? <Loading what="members" /> : null}
      {items.length > 0 && (
        <Table caption="Members of the project" columns={['Person', 'Role', 'Added', ...(canManage ? [{ hidden: 'Actions' }] : [])]}>
          {items.map((m) => (
            <tr key={m.userId}>
              <td>
                {m.name || m.email}
                {m.name ? <p class="meta">{m.email}</p> : null}
              </td>
              <td>
                {canManage ? (
                  <RoleSelect value={m.role} label={`Role of ${m.email}`} disabled={change.busy} onChange={(role) => void change.run(m, role)} />
                ) : (
                  ROLES.find((r) => r.id === m.role)?.text
                )}
              </td>
              <td>
                <Time iso={m.addedAt} />
              </td>
              {canManage && (
                <td>
                  <button type="button" class="danger small" disabled={remove.busy} onClick={() => void remove.run(m)}>
                    Remove<span class="visually-hidden"> {m.email}</span>
                  </button>
                </td>
              )}
            </tr>
          ))}
        </Table>
      )}
      {canManage && <p class="hint">A project keeps at least one owner: make someone else owner before you step down.</p>}
      {canManage && <ProjectInvitations projectId={props.projectId} invitations={invitations} />}
    </section>
  );
}
