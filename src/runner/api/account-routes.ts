import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { ADMIN_ONLY, IDENTITY, LOGIN_LIMITS_ADMIN, PUBLIC, SESSION_ONLY } from '../auth/access.js';
import { access, principalOf, userOf } from '../auth/authenticate.js';
import { sessionCookie } from '../auth/session-cookie.js';
import type { RunnerContext } from '../context.js';
import { createUser, deleteUser, getUser, listUsers, updateUser } from '../users/service.js';
import { ApiKeyIdentity, CreatedToken, Me, presentCreatedToken, presentToken, presentUser, TokenInfo, TokenScopeSchema } from './presenters.js';
import { Email, errors, IdParams, items, Name, NoContent, Nullable, Password, PROTECTED, Session, StringEnum, Timestamp, User } from './schemas.js';

/** A password change's answer: the new session and what happened to the other credentials. */
const PasswordChanged = Type.Object({
  ...Session.properties,
  revokedConnectedApps: Type.Integer({ minimum: 0, description: 'applications whose OAuth grants were revoked' }),
  keptPersonalTokens: Type.Integer({ minimum: 0, description: 'personal access tokens that keep working' }),
  notice: Type.String(),
});

/** What a profile change answers: the user, and the new address that waits for its proof. */
const ProfileChanged = Type.Object({
  ...User.properties,
  pendingEmail: Nullable(Type.String(), { description: 'a new address mailed a proof link, not in effect yet; null when none' }),
});

/** Login, setup, the signed-in user's profile, password and tokens, and user administration. */
export function registerAccountRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { users, account } = ctx;

  app.post(
    '/api/auth/login',
    {
      config: access(PUBLIC),
      schema: {
        tags: ['auth'],
        summary: 'Log in with email and password',
        description:
          'Returns a JWT valid for exactly 7 days, for `Authorization: Bearer`. Failed logins are rate limited: 5 per account from one address, ' +
          '20 per address, 100 per account from all addresses, within 15 minutes (429 with `Retry-After`).',
        operationId: 'login',
        body: Type.Object(
          {
            email: Type.String({ minLength: 1, maxLength: 254 }),
            password: Type.String({ minLength: 1, maxLength: 1024 }),
            browserSession: Type.Optional(
              Type.Boolean({
                description:
                  'Also set the web session cookie (httpOnly, SameSite=Lax) that the OAuth consent screen and connected-apps page read, so one sign-in serves the web UI and OAuth consent. The web UI sets it; API clients need not.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Session, ...errors(400, 401, 429) },
      },
    },
    async (req, reply) => {
      const session = await account.login(req.body.email, req.body.password, req.ip);
      if (req.body.browserSession) reply.header('set-cookie', sessionCookie(ctx.config.runner.url, session.token, session.expiresAt));
      return session;
    },
  );

  app.post(
    '/api/auth/logout',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['auth'],
        summary: 'Log out: end every web session of the user',
        description:
          'Ends every web session (JWT) of the signed-in user, in every browser, and the session cookie of the OAuth consent screen with them. ' +
          'Personal access tokens and connected applications keep working.',
        operationId: 'logout',
        response: { 204: NoContent, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => {
      await account.logout(userOf(req).user.id);
      return reply.code(204).header('set-cookie', sessionCookie(ctx.config.runner.url, null)).send(null);
    },
  );

  app.post(
    '/api/setup',
    {
      config: access(PUBLIC),
      schema: {
        tags: ['auth'],
        summary: 'Create the first administrator (first run only)',
        description:
          'Works only while no user exists (afterwards 409) and with the setup token (403 without): the one-time link `pier serve` prints at start ' +
          'while no user exists carries it (`/setup#token=…`), or the operator sets RUNNER_SETUP_TOKEN. Returns the new admin and a session.',
        operationId: 'setup',
        body: Type.Object(
          { setupToken: Type.String({ minLength: 1, maxLength: 200 }), email: Email, name: Type.Optional(Name), password: Password },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({ user: User, session: Session }),
          ...errors(400, 403, 409),
        },
      },
    },
    async (req, reply) => {
      const { user, session } = await account.setup(req.body);
      return reply.code(201).send({ user: presentUser(user), session });
    },
  );

  app.get(
    '/api/me',
    {
      config: access(IDENTITY),
      schema: {
        tags: ['account'],
        summary: 'The signed-in user (or, for the admin API key, what the key grants)',
        operationId: 'getMe',
        response: { 200: Type.Union([Me, ApiKeyIdentity]), ...errors(...PROTECTED) },
      },
      // The handler builds exactly one of the two documented shapes; plain JSON.stringify spares
      // fast-json-stringify's per-response ajv check of each anyOf branch (see schemas.ts).
      serializerCompiler: () => (data: unknown) => JSON.stringify(data),
    },
    async (req) => {
      const principal = principalOf(req);
      if (principal.type === 'api-key') {
        return { authenticatedBy: 'api-key' as const, role: 'api-key' as const, grants: ['executors', 'runs'] };
      }
      const p = userOf(req);
      const u = p.user;
      // Written out rather than spread from presentUser: this is the API's most frequent call.
      return {
        id: u.id,
        email: u.email,
        name: u.name,
        role: u.role,
        disabled: false,
        createdAt: u.created_at,
        updatedAt: u.updated_at,
        authenticatedBy: p.via,
        scope: p.via === 'jwt' ? null : p.scope,
      };
    },
  );

  app.patch(
    '/api/me',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Change the profile (name, email)',
        description:
          'The name changes at once. A new email changes at once for administrators, who set addresses (409 when another account has it). ' +
          'Anyone else proves the address first: the runner mails a link to it, and the address changes once the same account opens it ' +
          '(`POST /api/me/email/confirm`; `pendingEmail` says which address waits). A runner without mail refuses the change with 403 ' +
          '`email_change_needs_admin` (naming the field `email`) and changes nothing: ask an administrator. Sending the current address is no change.',
        operationId: 'updateMe',
        body: Type.Object({ name: Type.Optional(Name), email: Type.Optional(Email) }, { additionalProperties: false }),
        response: { 200: ProfileChanged, ...errors(...PROTECTED, 409) },
      },
    },
    async (req) => {
      const { user, pendingEmail } = await ctx.profile.update(userOf(req).user, req.body);
      return { ...presentUser(user), pendingEmail };
    },
  );

  app.post(
    '/api/me/email/confirm',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Prove a new email address',
        description:
          'With the token of the link mailed to the new address (the web UI page it opens sends it), signed in as the account that asked: ' +
          'the address becomes the account\'s. 404 when the token is not this account\'s, was used or expired (after 24 hours); 409 when ' +
          'another account has the address by now.',
        operationId: 'confirmEmail',
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: { 200: User, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => presentUser(await ctx.profile.confirmEmail(userOf(req).user, req.body.token)),
  );

  app.put(
    '/api/me/password',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Change the password',
        description:
          'Needs the current password. Ends all other web sessions and returns a new one, and revokes every connected ' +
          "application (OAuth grant) of the user. Personal access tokens keep working; the answer counts them.",
        operationId: 'changePassword',
        body: Type.Object({ currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), newPassword: Password }, { additionalProperties: false }),
        response: { 200: PasswordChanged, ...errors(...PROTECTED, 429) },
      },
    },
    async (req) => account.changePassword(userOf(req).user, req.body.currentPassword, req.body.newPassword, req.ip),
  );

  // --- personal access tokens -------------------------------------------------------------

  app.get(
    '/api/tokens',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['tokens'],
        summary: 'List personal access tokens',
        description: 'Never shows the secret; revoked tokens are not listed.',
        operationId: 'listTokens',
        response: { 200: items(TokenInfo), ...errors(...PROTECTED) },
      },
    },
    async (req) => ({ items: (await account.listTokens(userOf(req).user.id)).map(presentToken) }),
  );

  app.post(
    '/api/tokens',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['tokens'],
        summary: 'Create a personal access token',
        description: 'The token (`rnr_pat_…`) is shown once in the response and stored only as SHA-256. Use it as `Authorization: ApiKey <token>`.',
        operationId: 'createToken',
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
            scope: TokenScopeSchema,
            expiresAt: Type.Optional(Nullable(Timestamp)),
          },
          { additionalProperties: false },
        ),
        response: { 201: CreatedToken, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => {
      const { row, token } = await account.createToken(userOf(req).user.id, req.body);
      return reply.code(201).send(presentCreatedToken(row, token));
    },
  );

  app.delete(
    '/api/tokens/:id',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['tokens'],
        summary: 'Revoke a personal access token',
        description: 'Takes effect at once, on every instance.',
        operationId: 'revokeToken',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      await account.revokeToken(userOf(req).user.id, req.params.id);
      return reply.code(204).send(null);
    },
  );

  // --- user administration ------------------------------------------------------------------

  const Role = StringEnum(['admin', 'member']);

  app.get(
    '/api/users',
    {
      config: access(ADMIN_ONLY),
      schema: { tags: ['users'], summary: 'List users', operationId: 'listUsers', response: { 200: items(User), ...errors(...PROTECTED) } },
    },
    async () => ({ items: (await listUsers(users)).map(presentUser) }),
  );

  app.post(
    '/api/users',
    {
      config: access(ADMIN_ONLY),
      schema: {
        tags: ['users'],
        summary: 'Create a user',
        operationId: 'createUser',
        body: Type.Object({ email: Email, name: Type.Optional(Name), password: Password, role: Type.Optional(Role) }, { additionalProperties: false }),
        response: { 201: User, ...errors(...PROTECTED, 409) },
      },
    },
    async (req, reply) => {
      const user = await createUser(users, { ...req.body, role: req.body.role ?? 'member' }, ctx.now());
      return reply.code(201).send(presentUser(user));
    },
  );

  app.get(
    '/api/users/:id',
    {
      config: access(ADMIN_ONLY),
      schema: { tags: ['users'], summary: 'Get a user', operationId: 'getUser', params: IdParams, response: { 200: User, ...errors(...PROTECTED, 404) } },
    },
    async (req) => presentUser(await getUser(users, req.params.id)),
  );

  app.patch(
    '/api/users/:id',
    {
      config: access(ADMIN_ONLY),
      schema: {
        tags: ['users'],
        summary: "Change a user's name, email or role, or disable the account",
        description: 'Administrators set addresses: a new email takes effect at once (409 when another account has it).',
        operationId: 'updateUser',
        params: IdParams,
        body: Type.Object(
          { name: Type.Optional(Name), email: Type.Optional(Email), role: Type.Optional(Role), disabled: Type.Optional(Type.Boolean({ description: 'true: no credential of the account works (sessions end, OAuth grants are revoked, personal tokens wait); false: enabled again' })) },
          { additionalProperties: false },
        ),
        response: { 200: User, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => presentUser(await updateUser(users, req.params.id, req.body, ctx.now(), userOf(req).user.id)),
  );

  app.delete(
    '/api/users/:id',
    {
      config: access(ADMIN_ONLY),
      schema: {
        tags: ['users'],
        summary: 'Delete a user',
        description: 'Also deletes their tokens and project memberships. An administrator cannot delete themself, the last administrator or the only owner of a project (409).',
        operationId: 'deleteUser',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req, reply) => {
      await deleteUser(users, userOf(req).user.id, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/api/login-limits/:email',
    {
      config: access(LOGIN_LIMITS_ADMIN),
      schema: {
        tags: ['users'],
        summary: "Lift an account's login locks",
        description:
          'Forgets the failed logins of this email from every address and its account-wide count, so the right password works again at once. ' +
          'Failed logins are counted in memory by each instance: this clears them on the instance that answers only ' +
          '(behind a load balancer, call each instance by its own address, or restart them). 204 also when nothing was locked.',
        operationId: 'clearLoginLimits',
        params: Type.Object({ email: Email }),
        response: { 204: NoContent, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => {
      account.clearLoginLimits(req.params.email);
      return reply.code(204).send(null);
    },
  );
}
