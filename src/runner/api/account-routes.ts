import { Type } from 'typebox';
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { generateToken, hashPassword, randomUUID, sha256, verifyPassword } from '../../infra/secrets.js';
import { ADMIN_ONLY, CHALLENGE, IDENTITY, PUBLIC, SESSION_ONLY } from '../auth/access.js';
import { access, PAT_PREFIX, principalOf, userOf } from '../auth/authenticate.js';
import type { PersonalTokenRow } from '../auth/repository.js';
import type { RunnerContext } from '../context.js';
import { normalizeEmail } from '../users/repository.js';
import { createUser, deleteUser, presentUser, updateUser } from '../users/service.js';
import { Email, errors, IdParams, items, Name, NoContent, Nullable, NullableTimestamp, Password, PROTECTED, Session, StringEnum, Timestamp, User } from './schemas.js';

const Scope = StringEnum(['read', 'write']);

/** What `GET /api/me` says to the admin API key, which is no user. */
const ApiKeyIdentity = Type.Object({
  authenticatedBy: Type.Literal('api-key'),
  role: Type.Literal('api-key'),
  grants: Type.Array(Type.String(), { description: 'what the admin API key may do' }),
});

const TokenInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Scope,
  tokenHint: Type.String({ description: 'last characters of the token, for recognising it' }),
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
  lastUsedAt: NullableTimestamp,
  lastUsedIp: Nullable(Type.String()),
});

const CreatedToken = Type.Object({
  id: Type.String(),
  token: Type.String({ description: 'the secret, shown only in this response' }),
  name: Type.String(),
  scope: Scope,
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
});

const Me = Type.Object({
  ...User.properties,
  authenticatedBy: StringEnum(['jwt', 'pat', 'oauth']),
  scope: Nullable(Scope, { description: 'scope of the token used, null for a web session' }),
});

function presentToken(t: PersonalTokenRow) {
  return {
    id: t.id,
    name: t.name,
    scope: t.scope,
    tokenHint: t.token_hint,
    createdAt: t.created_at,
    expiresAt: t.expires_at,
    lastUsedAt: t.last_used_at,
    lastUsedIp: t.last_used_ip,
  };
}

// A real scrypt hash to verify against when the email is unknown, so response time does not
// reveal which accounts exist.
let dummyHash: Promise<string> | null = null;

export function registerAccountRoutes(app: HttpApp, ctx: RunnerContext): void {
  const { users, pats, jwt, loginLimiter } = ctx;

  app.post(
    '/api/auth/login',
    {
      config: access(PUBLIC),
      schema: {
        tags: ['auth'],
        summary: 'Log in with email and password',
        description: 'Returns a JWT valid for exactly 7 days, for `Authorization: Bearer`. Failed logins are rate limited per address and per account.',
        operationId: 'login',
        body: Type.Object({ email: Type.String({ minLength: 1, maxLength: 254 }), password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false }),
        response: { 200: Session, ...errors(400, 401, 429) },
      },
    },
    async (req) => {
      const email = normalizeEmail(req.body.email);
      loginLimiter.check(req.ip, email);
      const user = await users.findByEmail(email);
      dummyHash ??= hashPassword(randomUUID());
      const ok = await verifyPassword(req.body.password, user?.password_hash ?? (await dummyHash));
      if (!user || !ok) {
        loginLimiter.fail(req.ip, email);
        throw new UnauthorizedError('wrong email or password', CHALLENGE);
      }
      loginLimiter.succeed(email);
      return jwt.issue(user.id, user.session_epoch);
    },
  );

  app.post(
    '/api/setup',
    {
      config: access(PUBLIC),
      schema: {
        tags: ['auth'],
        summary: 'Create the first administrator (first run only)',
        description: 'Works only while no user exists; afterwards 409. Returns the new admin and a session.',
        operationId: 'setup',
        body: Type.Object({ email: Email, name: Type.Optional(Name), password: Password }, { additionalProperties: false }),
        response: {
          201: Type.Object({ user: User, session: Session }),
          ...errors(400, 409),
        },
      },
    },
    async (req, reply) => {
      // Checked before hashing the password so the open endpoint costs nothing once set up;
      // the insert itself re-checks atomically (two racing setups: one wins, one gets 409).
      if ((await users.count()) > 0) throw new ConflictError('setup is already done: a user exists', 'setup_done');
      const user = await createUser(users, { ...req.body, role: 'admin' }, ctx.now(), true);
      const session = await jwt.issue(user.id, user.session_epoch);
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
        operationId: 'updateMe',
        body: Type.Object({ name: Type.Optional(Name), email: Type.Optional(Email) }, { additionalProperties: false }),
        response: { 200: User, ...errors(...PROTECTED, 409) },
      },
    },
    async (req) => presentUser(await updateUser(users, userOf(req).user.id, req.body, ctx.now())),
  );

  app.put(
    '/api/me/password',
    {
      config: access(SESSION_ONLY),
      schema: {
        tags: ['account'],
        summary: 'Change the password',
        description: 'Needs the current password. Ends all other web sessions and returns a new one.',
        operationId: 'changePassword',
        body: Type.Object({ currentPassword: Type.String({ minLength: 1, maxLength: 1024 }), newPassword: Password }, { additionalProperties: false }),
        response: { 200: Session, ...errors(...PROTECTED, 429) },
      },
    },
    async (req) => {
      const p = userOf(req);
      loginLimiter.check(req.ip, p.user.email);
      if (!(await verifyPassword(req.body.currentPassword, p.user.password_hash))) {
        loginLimiter.fail(req.ip, p.user.email);
        throw new ValidationError('the current password is wrong', [{ field: 'currentPassword', message: 'is wrong' }], 'wrong_password');
      }
      const updated = await users.setPassword(p.user.id, await hashPassword(req.body.newPassword), ctx.now().toISOString());
      if (!updated) throw new NotFoundError('the user no longer exists');
      return jwt.issue(updated.id, updated.session_epoch);
    },
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
    async (req) => ({ items: (await pats.listForUser(userOf(req).user.id)).map(presentToken) }),
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
            scope: Scope,
            expiresAt: Type.Optional(Nullable(Timestamp)),
          },
          { additionalProperties: false },
        ),
        response: { 201: CreatedToken, ...errors(...PROTECTED) },
      },
    },
    async (req, reply) => {
      const p = userOf(req);
      const now = ctx.now();
      let expiresAt: string | null = null;
      if (req.body.expiresAt != null) {
        const t = Date.parse(req.body.expiresAt);
        if (!Number.isFinite(t) || t <= now.getTime()) {
          throw new ValidationError('expiresAt must be in the future', [{ field: 'expiresAt', message: 'must be in the future' }]);
        }
        expiresAt = new Date(t).toISOString();
      }
      const token = generateToken(PAT_PREFIX);
      const row = await pats.insert({
        id: randomUUID(),
        user_id: p.user.id,
        name: req.body.name.trim(),
        scope: req.body.scope,
        token_hash: sha256(token),
        token_hint: token.slice(-4),
        created_at: now.toISOString(),
        expires_at: expiresAt,
      });
      return reply.code(201).send({ id: row.id, token, name: row.name, scope: row.scope, createdAt: row.created_at, expiresAt: row.expires_at });
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
      const p = userOf(req);
      if (!(await pats.revoke(p.user.id, req.params.id, ctx.now().toISOString()))) {
        throw new NotFoundError('no such token');
      }
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
    async () => ({ items: (await users.list()).map(presentUser) }),
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
    async (req) => {
      const user = await users.findById(req.params.id);
      if (!user) throw new NotFoundError('no such user');
      return presentUser(user);
    },
  );

  app.patch(
    '/api/users/:id',
    {
      config: access(ADMIN_ONLY),
      schema: {
        tags: ['users'],
        summary: "Change a user's name or role",
        operationId: 'updateUser',
        params: IdParams,
        body: Type.Object({ name: Type.Optional(Name), role: Type.Optional(Role) }, { additionalProperties: false }),
        response: { 200: User, ...errors(...PROTECTED, 404, 409) },
      },
    },
    async (req) => presentUser(await updateUser(users, req.params.id, req.body, ctx.now())),
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
}
