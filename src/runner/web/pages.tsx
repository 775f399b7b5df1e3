import type { ComponentChildren } from 'preact';
import { render } from 'preact-render-to-string';

const STYLE = `body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}
button{padding:.5rem 1rem;margin:1rem .5rem 0 0}.note{color:#6b4e00;background:#fff6d6;padding:.5rem}
.error{color:#8b0000}table{width:100%;border-collapse:collapse}td,th{text-align:left;padding:.3rem;border-bottom:1px solid #ddd}`;

function Layout(props: { title: string; children: ComponentChildren }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Pier runner`}</title>
        <style>{STYLE}</style>
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** Server-rendered HTML; preact escapes every interpolated value. */
export function page(title: string, body: ComponentChildren): string {
  return `<!doctype html>${render(<Layout title={title}>{body}</Layout>)}`;
}

export function loginPage(p: { csrf: string; returnTo: string; error?: string; email?: string }): string {
  return page(
    'Sign in',
    <main>
      <h1>Sign in to the Pier runner</h1>
      {p.error ? <p class="error" role="alert">{p.error}</p> : null}
      <form method="post" action="/oauth/login">
        <input type="hidden" name="csrf" value={p.csrf} />
        <input type="hidden" name="return_to" value={p.returnTo} />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value={p.email ?? ''} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>
    </main>,
  );
}

export interface ConsentView {
  csrf: string;
  clientName: string;
  redirectHost: string;
  scope: 'read' | 'write';
  userEmail: string;
  /** The authorization request's parameters, posted back and validated again. */
  params: Record<string, string>;
}

const SCOPE_TEXT = {
  read: 'read your projects, workflows and runs',
  write: 'read and change your projects, workflows and runs, and start runs',
};

export function consentPage(v: ConsentView): string {
  return page(
    'Authorize application',
    <main>
      <h1>Authorize “{v.clientName}”?</h1>
      <p class="note">The application named itself “{v.clientName}”; the runner has not verified this name.</p>
      <p>
        It will be able to <strong>{SCOPE_TEXT[v.scope]}</strong> (scope <code>{v.scope}</code>) as <strong>{v.userEmail}</strong>.
      </p>
      <p>
        After your answer you go to <strong>{v.redirectHost}</strong>.
      </p>
      <form method="post" action="/oauth/authorize">
        <input type="hidden" name="csrf" value={v.csrf} />
        {Object.entries(v.params).map(([k, val]) => (
          <input type="hidden" name={k} value={val} key={k} />
        ))}
        <button type="submit" name="decision" value="approve">Approve</button>
        <button type="submit" name="decision" value="deny">Deny</button>
      </form>
    </main>,
  );
}

/**
 * `back`: the error response for a trusted redirect URI. It is a link the user follows, not an
 * automatic redirect: clients register themselves (RFC 7591), so an automatic error redirect
 * would make this server an open redirector for anyone who registers (RFC 9700 §4.11.2).
 */
export function errorPage(message: string, back?: { href: string; host: string }): string {
  return page(
    'Authorization error',
    <main>
      <h1>This authorization request cannot be processed</h1>
      <p class="error">{message}</p>
      {back ? (
        <p>
          <a href={back.href} rel="noreferrer">
            Return to {back.host}
          </a>{' '}
          (the application's address, not verified by this runner).
        </p>
      ) : (
        <p>You were not sent back to the application, because its address could not be trusted.</p>
      )}
    </main>,
  );
}

export interface ConnectedAppView {
  clientId: string;
  name: string;
  scope: string;
  firstAuthorizedAt: string;
  lastUsedAt: string;
}

export function connectedAppsPage(p: { csrf: string; userEmail: string; apps: ConnectedAppView[] }): string {
  return page(
    'Connected applications',
    <main>
      <h1>Connected applications</h1>
      <p>Applications you authorized to act as {p.userEmail}. Names are as the applications gave them (unverified).</p>
      {p.apps.length === 0 ? (
        <p>No application is connected.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Application</th><th>Scope</th><th>First authorized</th><th>Last used</th><th /></tr>
          </thead>
          <tbody>
            {p.apps.map((a) => (
              <tr key={a.clientId}>
                <td>{a.name}</td>
                <td>{a.scope}</td>
                <td>{a.firstAuthorizedAt}</td>
                <td>{a.lastUsedAt}</td>
                <td>
                  <form method="post" action="/connected-apps/revoke">
                    <input type="hidden" name="csrf" value={p.csrf} />
                    <input type="hidden" name="client_id" value={a.clientId} />
                    <button type="submit">Revoke</button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>,
  );
}
