import type { ComponentChildren } from 'preact';
import { render } from 'preact-render-to-string';
import { readUiManifest } from './ui-build.js';

/**
 * The pages the server renders itself (the OAuth consent screen and its errors) wear the web UI's
 * stylesheet, so a user moves between them and the UI without a change of look. Without a built
 * UI (never the case after `npm ci`) they are plain HTML.
 */
let stylesheet: string | null | undefined;
function uiStylesheet(): string | null {
  if (stylesheet === undefined) stylesheet = readUiManifest()?.css ?? null;
  return stylesheet;
}

/** No script at all; styles from our own origin only. No form-action: the consent answer redirects to the application. */
export const SERVER_PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'";

function Layout(props: { title: string; signedInAs?: string; children: ComponentChildren }) {
  const css = uiStylesheet();
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${props.title} · Pier runner`}</title>
        {css ? <link rel="stylesheet" href={`/ui/${css}`} /> : null}
      </head>
      <body>
        <header class="top">
          <a class="brand" href="/">
            Pier runner
          </a>
          {props.signedInAs ? (
            <div class="account">
              <a href="/account">{props.signedInAs}</a>
            </div>
          ) : null}
        </header>
        <main class="narrow" id="main">
          {props.children}
        </main>
      </body>
    </html>
  );
}

/** Server-rendered HTML; preact escapes every interpolated value. */
export function page(title: string, body: ComponentChildren, signedInAs?: string): string {
  return `<!doctype html>${render(
    <Layout title={title} signedInAs={signedInAs}>
      {body}
    </Layout>,
  )}`;
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
    <div class="card">
      <h1>
        Authorize “<bdi>{v.clientName}</bdi>”?
      </h1>
      <p class="alert note">
        The application named itself “<bdi>{v.clientName}</bdi>”; the runner has not verified this name.
      </p>
      <p>
        It will be able to <strong>{SCOPE_TEXT[v.scope]}</strong> (scope <code>{v.scope}</code>) as <strong>{v.userEmail}</strong>.
      </p>
      <p>
        After your answer you go to <strong class="url">{v.redirectHost}</strong>.
      </p>
      <form method="post" action="/oauth/authorize">
        <input type="hidden" name="csrf" value={v.csrf} />
        {Object.entries(v.params).map(([k, val]) => (
          <input type="hidden" name={k} value={val} key={k} />
        ))}
        <div class="buttons">
          <button type="submit" name="decision" value="approve">
            Approve
          </button>
          {v.scope === 'write' && (
            <button type="submit" name="decision" value="approve-read" class="secondary">
              Approve read only
            </button>
          )}
          <button type="submit" name="decision" value="deny" class="secondary">
            Deny
          </button>
        </div>
      </form>
      <p class="meta">
        You can review and revoke applications later under <a href="/connected-apps">Connected applications</a>. Not {v.userEmail}? Sign out from the{' '}
        <a href="/account">runner</a> first.
      </p>
    </div>,
    v.userEmail,
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
    <div class="card">
      <h1>This authorization request cannot be processed</h1>
      <p class="alert error">{message}</p>
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
    </div>,
  );
}
