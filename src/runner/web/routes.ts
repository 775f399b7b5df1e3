import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpApp } from '../../infra/http.js';
import { UnauthorizedError } from '../../infra/errors.js';
import { constantTimeEqual } from '../../infra/secrets.js';
import { PUBLIC } from '../auth/access.js';
import { access, type UserPrincipal } from '../auth/authenticate.js';
import { sessionCookieName } from '../auth/session-cookie.js';
import type { RunnerContext } from '../context.js';

import { AuthorizationPageError, AuthorizationRedirectError } from '../oauth/authorize.js';
import { OAUTH_PATHS } from '../oauth/metadata.js';
import { consentPage, errorPage, SERVER_PAGE_CSP } from './pages.js';

/** The web UI's page of connected applications: where a sign-in without a request returns. */
const CONNECTED_APPS = '/connected-apps';
const LOGIN = '/oauth/login';
/** The web UI's sign-in page (ui/): it returns to `return_to` once signed in. */
const UI_LOGIN = '/login';

type Form = Record<string, unknown>;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * Pages of the authorization flow: never framed (clickjacking of the consent button, RFC 9700
 * §4.16 / RFC 6749 §10.13), never cached, no script at all.
 */
function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply
    .code(status)
    .header('x-frame-options', 'DENY')
    .header('content-security-policy', SERVER_PAGE_CSP)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(body);
}

/** Only our own pages may be returned to after login: no open redirect (RFC 9700 §4.11). */
function safeReturnTo(v: unknown): string {
  const s = str(v);
  return s.startsWith(`${OAUTH_PATHS.authorize}?`) ? s : CONNECTED_APPS;
}

/** The authorization request parameters to carry through the consent form (strings only). */
function requestParams(q: Form): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'resource']) {
    if (typeof q[k] === 'string') out[k] = q[k] as string;
  }
  return out;
}

/**
 * The consent screen, with the cookie session the web UI's sign-in sets. Signing in and the
 * connected applications are pages of the web UI (ui/), which uses the public API.
 */
export function registerWebRoutes(app: HttpApp, ctx: RunnerContext): void {
  const SESSION_COOKIE = sessionCookieName(ctx.config.runner.url);
  const options = { config: access(PUBLIC), schema: { hide: true } };

  /**
   * Anti-forgery tokens of the forms (OWASP CSRF prevention: a synchronizer token bound to the
   * session). Signed in: an HMAC of the session cookie under the runner's secret
   * (JwtSessions.formToken), so neither the browser nor another session can choose it.
   */
  function sessionFormToken(req: FastifyRequest): Promise<string> {
    return ctx.account.formToken('session-form', req.cookies[SESSION_COOKIE] ?? '');
  }

  async function csrfValid(req: FastifyRequest, kind: 'session-form'): Promise<boolean> {
    const bound = req.cookies[SESSION_COOKIE];
    const sent = str((req.body as Form | undefined)?.csrf);
    return !!bound && sent.length > 0 && constantTimeEqual(await ctx.account.formToken(kind, bound), sent);
  }

  /** The signed-in user of the cookie session (the web UI's JWT), or null. */
  async function sessionUser(req: FastifyRequest): Promise<UserPrincipal['user'] | null> {
    const jwt = req.cookies[SESSION_COOKIE];
    if (!jwt) return null;
    try {
      const p = await ctx.auth.authenticate(`Bearer ${jwt}`, req.ip);
      return p.type === 'user' && p.via === 'jwt' ? p.user : null;
    } catch (e) {
      if (e instanceof UnauthorizedError) return null;
      throw e;
    }
  }

  const toLogin = (reply: FastifyReply, returnTo: string) => reply.redirect(`${UI_LOGIN}?return_to=${encodeURIComponent(returnTo)}`, 303);

  /** Runs the authorization request checks; answers the error itself and returns null on failure. */
  async function authorizationRequest(params: Form, reply: FastifyReply) {
    try {
      return await ctx.oauth.authorizationRequest(params);
    } catch (e) {
      if (e instanceof AuthorizationPageError) {
        html(reply, 400, errorPage(e.message));
        return null;
      }
      if (e instanceof AuthorizationRedirectError) {
        // Before the user has seen a consent screen an error is shown, with the error response
        // as a link (pages.tsx errorPage): never an automatic redirect to a self-registered URI.
        const href = ctx.oauth.errorRedirect(e.redirectUri, e.error, e.message, e.state);
        html(reply, 400, errorPage(e.message, { href, host: new URL(e.redirectUri).host }));
        return null;
      }
      throw e;
    }
  }

  // RFC 6749 §3.1: the authorization endpoint. Consent is asked on every request (spec B,
  // OAuth rule 2), never remembered.
  app.get(OAUTH_PATHS.authorize, options, async (req, reply) => {
    const query = req.query as Form;
    const areq = await authorizationRequest(query, reply);
    if (!areq) return reply;
    const user = await sessionUser(req);
    if (!user) return toLogin(reply, req.url);
    return html(
      reply,
      200,
      consentPage({
        csrf: await sessionFormToken(req),
        clientName: areq.client.name,
        redirectHost: new URL(areq.redirectUri).host,
        scope: areq.scope,
        userEmail: user.email,
        params: requestParams(query),
      }),
    );
  });

  app.post(OAUTH_PATHS.authorize, options, async (req, reply) => {
    const form = (req.body ?? {}) as Form;
    // Without a valid token the decision may be forged by another site: no redirect at all.
    if (!(await csrfValid(req, 'session-form'))) return html(reply, 403, errorPage('The form expired or was not sent from this site. Start again from the application.'));
    const user = await sessionUser(req);
    if (!user) return toLogin(reply, `${OAUTH_PATHS.authorize}?${new URLSearchParams(requestParams(form))}`);
    const areq = await authorizationRequest(form, reply);
    if (!areq) return reply;
    // "Approve read only" grants less than asked (RFC 6749 §3.3: the token response says so).
    const approved = form.decision === 'approve' ? areq : form.decision === 'approve-read' ? { ...areq, scope: 'read' as const } : null;
    const target = approved ? await ctx.oauth.approve(approved, user.id) : ctx.oauth.deny(areq);
    // Disabled while deciding: nothing was granted, and the client learns nothing of the account.
    if (target === null) return html(reply, 403, errorPage('This account is disabled; an administrator can enable it again. Nothing was granted.'));
    return reply.redirect(target, 303);
  });

  // One sign-in for the web UI and the OAuth pages: the web UI's login page sets the session
  // cookie these pages read (POST /api/auth/login with browserSession).
  app.get(LOGIN, options, async (req, reply) => toLogin(reply, safeReturnTo((req.query as Form).return_to)));
}
