import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { useAuth } from '../auth.js';
import { Empty, ErrorNote, Field, Loading, PageHeader, Table, TextField, Time } from '../components.js';
import { useAction, useApi, useTitle } from '../hooks.js';
import type { Role, User } from '../types.js';

function CreateUser(props: { onCreated(): void }) {
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [created, setCreated] = useState('');
  const create = useAction(async () => {
    const user = await api<User>('POST', '/api/users', { email: email.trim(), ...(name.trim() ? { name: name.trim() } : {}), password, role });
    setCreated(user.email);
    setEmail('');
    setName('');
    setPassword('');
    props.onCreated();
  });
  return (
    <form
      class="card"
      aria-labelledby="new-user-h"
      onSubmit={(e) => {
        e.preventDefault();
        void create.run();
      }}
    >
      <h2 id="new-user-h">New user</h2>
      <ErrorNote error={create.error} placed={['email', 'name', 'password', 'role']} />
      <div class="grid-2 tight">
        <TextField label="Email" type="email" name="email" autocomplete="off" required value={email} onInput={setEmail} error={create.error?.forField('email')} />
        <TextField label="Name" name="name" autocomplete="off" maxLength={200} value={name} onInput={setName} error={create.error?.forField('name')} />
        <TextField
          label="Initial password"
          type="password"
          name="password"
          autocomplete="new-password"
          required
          minLength={10}
          hint="At least 10 characters; tell it to the person, who changes it under Account."
          value={password}
          onInput={setPassword}
          error={create.error?.forField('password')}
        />
        <Field label="Role" error={create.error?.forField('role')}>
          {(id) => (
            <select id={id} value={role} onChange={(e) => setRole((e.currentTarget as HTMLSelectElement).value as Role)}>
              <option value="member">Member</option>
              <option value="admin">Administrator</option>
            </select>
          )}
        </Field>
      </div>
      <div class="buttons">
        <button type="submit" disabled={create.busy}>
          Create user
        </button>
        {created && <span role="status">Created {created}.</span>}
      </div>
    </form>
  );
}

/** An administrator sets a user's address (only administrators do: others are invited by it). */
function ChangeEmail(props: { user: User; onDone(): void; onCancel(): void }) {
  const [email, setEmail] = useState(props.user.email);
  const save = useAction(async () => {
    await api<User>('PATCH', `/api/users/${encodeURIComponent(props.user.id)}`, { email: email.trim() });
    props.onDone();
  });
  return (
    <form
      class="card"
      aria-labelledby="change-email-h"
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <h2 id="change-email-h">Email of {props.user.name || props.user.email}</h2>
      <ErrorNote error={save.error} placed={['email']} />
      <TextField
        label="Email"
        type="email"
        name="email"
        autocomplete="off"
        required
        hint="Takes effect at once. Invitations to the new address then show to this account."
        value={email}
        onInput={setEmail}
        error={save.error?.forField('email')}
      />
      <div class="buttons">
        <button type="submit" disabled={save.busy}>
          Save email
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function UsersPage() {
  useTitle('Users');
  const { me } = useAuth();
  const users = useApi<{ items: User[] }>(me.role === 'admin' ? '/api/users' : null);
  const [notice, setNotice] = useState('');
  const [editing, setEditing] = useState<User | null>(null);
  const setRole = useAction(async (u: User, role: Role) => {
    await api<User>('PATCH', `/api/users/${encodeURIComponent(u.id)}`, { role });
    users.reload();
  });
  const remove = useAction(async (u: User) => {
    if (!confirm(`Delete ${u.email}? Their tokens and project memberships go too.`)) return;
    await api('DELETE', `/api/users/${encodeURIComponent(u.id)}`);
    users.reload();
  });
  const toggle = useAction(async (u: User) => {
    if (!u.disabled && !confirm(`Disable ${u.email}? Their sessions end, connected applications are disconnected and their personal tokens stop working until you enable the account again.`)) return;
    await api<User>('PATCH', `/api/users/${encodeURIComponent(u.id)}`, { disabled: !u.disabled });
    users.reload();
  });
  const unlock = useAction(async (u: User) => {
    await api('DELETE', `/api/login-limits/${encodeURIComponent(u.email)}`);
    setNotice(`${u.email} can sign in again at once (on this instance).`);
  });
  if (me.role !== 'admin') return <PageHeader title="Users" sub="Only administrators manage users." />;
  const items = users.data?.items ?? [];
  const admins = items.filter((u) => u.role === 'admin' && !u.disabled).length;
  return (
    <>
      <PageHeader title="Users" sub="Administrators manage accounts; members see the projects they belong to." />
      <CreateUser onCreated={users.reload} />
      {editing && (
        <ChangeEmail
          key={editing.id}
          user={editing}
          onCancel={() => setEditing(null)}
          onDone={() => {
            setEditing(null);
            users.reload();
          }}
        />
      )}
      <ErrorNote error={users.error ?? setRole.error ?? remove.error ?? unlock.error ?? toggle.error} />
      {notice && (
        <p class="alert ok" role="status">
          {notice}
        </p>
      )}
      {users.loading && !users.data ? <Loading what="users" /> : null}
      {users.data && items.length === 0 ? <Empty>No users.</Empty> : null}
      {items.length > 0 && (
        <section class="card" aria-label="All users">
          <Table caption="Users" columns={['Person', 'Role', 'Since', { hidden: 'Actions' }]}>
            {items.map((u) => {
              const lastAdmin = u.role === 'admin' && !u.disabled && admins === 1;
              const self = u.id === me.id;
              return (
                <tr key={u.id}>
                  <td>
                    {u.name || u.email}
                    {u.name ? <p class="meta">{u.email}</p> : null}
                  </td>
                  <td>
                    {u.role === 'admin' ? 'Administrator' : 'Member'}
                    {u.disabled && <p class="badge status-failed">Disabled</p>}
                  </td>
                  <td>
                    <Time iso={u.createdAt} />
                  </td>
                  <td>
                    <div class="buttons">
                      {u.role === 'admin' ? (
                        <button type="button" class="secondary small" disabled={lastAdmin || setRole.busy} onClick={() => void setRole.run(u, 'member')}>
                          Make member<span class="visually-hidden"> {u.email}</span>
                        </button>
                      ) : (
                        <button type="button" class="secondary small" disabled={setRole.busy} onClick={() => void setRole.run(u, 'admin')}>
                          Make administrator<span class="visually-hidden"> {u.email}</span>
                        </button>
                      )}
                      <button type="button" class="secondary small" disabled={(lastAdmin && !u.disabled) || (self && !u.disabled) || toggle.busy} onClick={() => void toggle.run(u)}>
                        {u.disabled ? 'Enable' : 'Disable'}
                        <span class="visually-hidden"> {u.email}</span>
                      </button>
                      <button type="button" class="secondary small" onClick={() => setEditing(u)}>
                        Change email<span class="visually-hidden"> of {u.email}</span>
                      </button>
                      <button type="button" class="secondary small" disabled={unlock.busy} onClick={() => void unlock.run(u)}>
                        Lift login locks<span class="visually-hidden"> of {u.email}</span>
                      </button>
                      <button type="button" class="danger small" disabled={lastAdmin || self || remove.busy} onClick={() => void remove.run(u)}>
                        Delete<span class="visually-hidden"> {u.email}</span>
                      </button>
                    </div>
                    {lastAdmin && <p class="hint">The last administrator keeps the role: make someone else administrator first.</p>}
                    {self && !lastAdmin && <p class="hint">You cannot delete your own account.</p>}
                  </td>
                </tr>
              );
            })}
          </Table>
        </section>
      )}
    </>
  );
}
