import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../../infra/errors.js';
import { generateToken, hashPassword, randomUUID, sha256, verifyPassword } from '../../infra/secrets.js';
import type { SettingsRepository } from '../settings/repository.js';
import { normalizeEmail, type UserRow, type UsersRepository } from '../users/repository.js';
import { createUser } from '../users/service.js';
import { CHALLENGE } from './access.js';
import { PAT_PREFIX } from './authenticate.js';
import type { JwtSessions } from './jwt.js';
import type { LoginLimiter } from './login-limiter.js';
import type { PersonalTokenRow, PersonalTokensRepository, TokenScope } from './repository.js';

export interface AccountDeps {
  users: UsersRepository;
  pats: PersonalTokensRepository;
  jwt: JwtSessions;
  loginLimiter: LoginLimiter;
  settings: SettingsRepository;
  now: () => Date;
}

/** Prefix of the one-time token that creating the first administrator needs. */
export const SETUP_TOKEN_PREFIX = 'rnr_setup_';
/**
 * Where the setup tokens are kept (shared by every instance): one key per token, the prefix then
 * its SHA-256, with the time it was made as the value.
 */
const SETUP_TOKEN_KEYS = 'setup-token:';
/** Where the one setup token's SHA-256 was kept before each start added its own. */
const OLD_SETUP_TOKEN_KEY = 'setup_token_sha256';
/** Setup links kept valid at once (the newest): restarts while nobody signs up cannot pile up tokens. */
export const MAX_SETUP_LINKS = 20;

export interface Session {
  token: string;
  expiresAt: string;
}

export interface PasswordChanged extends Session {
  revokedConnectedApps: number;
  keptPersonalTokens: number;
  notice: string;
}

/** Logins, first-run setup, password changes and personal access tokens of the signed-in user. */
export class AccountService {
  // A real scrypt hash to verify against when the email is unknown, so response time does not
  // reveal which accounts exist.
  private dummyHash: Promise<string> | null = null;

  constructor(private readonly d: AccountDeps) {}

  /** Email and password → a 7-day session. Failures count per account and address, per address and per account (429). */
  async login(email: string, password: string, address: string): Promise<Session> {
    const account = normalizeEmail(email);
    this.d.loginLimiter.check(address, account);
    const user = await this.d.users.findByEmail(account);
    this.dummyHash ??= hashPassword(randomUUID());
    const ok = await verifyPassword(password, user?.password_hash ?? (await this.dummyHash));
    if (!user || !ok) {
      this.d.loginLimiter.fail(address, account);
      throw new UnauthorizedError('wrong email or password', CHALLENGE);
    }
    this.d.loginLimiter.succeed(address, account);
    // Said only to whoever knows the password: a disabled account is no secret to its owner.
    if (user.disabled_at !== null) throw new UnauthorizedError('this account is disabled; an administrator can enable it again', CHALLENGE);
    return this.d.jwt.issue(user.id, user.session_epoch);
  }

  /**
   * At start, while no user exists: the token that creating the first administrator needs, so
   * that no one who merely reaches a fresh instance over the network can claim it. A new one at
   * every start (or the one the operator configured), stored as SHA-256 only; the links printed
   * at earlier starts stay valid until the first administrator exists (an operator who restarts
   * with API_KEY, as the first start advises, keeps the link already opened), the newest
   * MAX_SETUP_LINKS of them. Null once a user exists.
   */
  async openSetup(configured: string | null): Promise<string | null> {
    if ((await this.d.users.count()) > 0) {
      await this.d.settings.deletePrefixed(SETUP_TOKEN_KEYS);
      await this.d.settings.delete(OLD_SETUP_TOKEN_KEY);
      return null;
    }
    const made = this.d.now().toISOString();
    const older = await this.d.settings.get(OLD_SETUP_TOKEN_KEY);
    if (older !== undefined) {
      await this.d.settings.set(`${SETUP_TOKEN_KEYS}${older}`, made);
      await this.d.settings.delete(OLD_SETUP_TOKEN_KEY);
    }
    const token = configured ?? generateToken(SETUP_TOKEN_PREFIX);
    await this.d.settings.set(`${SETUP_TOKEN_KEYS}${sha256(token)}`, made);
    const kept = (await this.d.settings.listPrefixed(SETUP_TOKEN_KEYS)).sort((a, b) => (a.value < b.value ? 1 : a.value > b.value ? -1 : 0));
    for (const stale of kept.slice(MAX_SETUP_LINKS)) if (stale.key !== `${SETUP_TOKEN_KEYS}${sha256(token)}`) await this.d.settings.delete(stale.key);
    return token;
  }

  /** The first administrator, only while no user exists (409 afterwards) and with a setup token (403 without). */
  async setup(input: { setupToken: string; email: string; name?: string; password: string }): Promise<{ user: UserRow; session: Session }> {
    // Checked before hashing the password so the open endpoint costs nothing once set up; the
    // insert itself re-checks atomically (two racing setups: one wins, one gets 409).
    if ((await this.d.users.count()) > 0) throw new ConflictError('setup is already done: a user exists', 'setup_done');
    // Looked up by its SHA-256 (a token of 32 random bytes, or a configured one of 32 characters
    // or more): the lookup reveals nothing a guess could use.
    if ((await this.d.settings.get(`${SETUP_TOKEN_KEYS}${sha256(input.setupToken)}`)) === undefined) {
      throw new ForbiddenError(
        'the setup token is wrong: open a setup link that `pier serve` printed at start (each start while no user exists prints one; all stay valid until the first administrator exists), or run `pier runner user add --admin`',
        'setup_token_invalid',
      );
    }
    const { setupToken: _, ...fields } = input;
    const user = await createUser(this.d.users, { ...fields, role: 'admin' }, this.d.now(), true);
    await this.d.settings.deletePrefixed(SETUP_TOKEN_KEYS);
    return { user, session: await this.d.jwt.issue(user.id, user.session_epoch) };
  }

  /** Ends every web session of the user (the UI's and the consent screen's): the session epoch moves on. */
  async logout(userId: string): Promise<void> {
    await this.d.users.endSessions(userId, this.d.now().toISOString());
  }

  /**
   * Needs the current password (scored like a login). Ends every earlier web session and
   * revokes the connected applications (their grants came from a session of the old password,
   * as GitHub does with OAuth apps on a password reset); personal access tokens are credentials
   * of their own, made for scripts and CI, and keep working: the answer says so and how many.
   */
  async changePassword(user: UserRow, currentPassword: string, newPassword: string, address: string): Promise<PasswordChanged> {
    this.d.loginLimiter.check(address, user.email);
    if (!(await verifyPassword(currentPassword, user.password_hash))) {
      this.d.loginLimiter.fail(address, user.email);
      throw new ValidationError('the current password is wrong', [{ field: 'currentPassword', message: 'is wrong' }], 'wrong_password');
    }
    const changed = await this.d.users.setPassword(user.id, await hashPassword(newPassword), this.d.now().toISOString());
    if (!changed) throw new NotFoundError('the user no longer exists');
    const session = await this.d.jwt.issue(changed.user.id, changed.user.session_epoch);
    const keptPersonalTokens = (await this.d.pats.listForUser(user.id)).length;
    return {
      ...session,
      revokedConnectedApps: changed.revokedConnectedApps,
      keptPersonalTokens,
      notice:
        'Other web sessions have ended and connected applications must be authorized again. ' +
        'Personal access tokens keep working; revoke them under /api/tokens if the old password may be known to someone else.',
    };
  }

  /** Lifts every login lock of `email` on this instance (the limiter is in memory). */
  clearLoginLimits(email: string): void {
    this.d.loginLimiter.clear(normalizeEmail(email));
  }

  /** An anti-forgery token for a web form, bound to `value` on the server (JwtSessions.formToken). */
  formToken(purpose: string, value: string): Promise<string> {
    return this.d.jwt.formToken(purpose, value);
  }

  listTokens(userId: string): Promise<PersonalTokenRow[]> {
    return this.d.pats.listForUser(userId);
  }

  /** A new `rnr_pat_…` token: returned once, stored as SHA-256 only. */
  async createToken(userId: string, input: { name: string; scope: TokenScope; expiresAt?: string | null }): Promise<{ row: PersonalTokenRow; token: string }> {
    const now = this.d.now();
    let expiresAt: string | null = null;
    if (input.expiresAt != null) {
      const t = Date.parse(input.expiresAt);
      if (!Number.isFinite(t) || t <= now.getTime()) {
        throw new ValidationError('expiresAt must be in the future', [{ field: 'expiresAt', message: 'must be in the future' }]);
      }
      expiresAt = new Date(t).toISOString();
    }
    const token = generateToken(PAT_PREFIX);
    const row = await this.d.pats.insert({
      id: randomUUID(),
      user_id: userId,
      name: input.name.trim(),
      scope: input.scope,
      token_hash: sha256(token),
      token_hint: token.slice(-4),
      created_at: now.toISOString(),
      expires_at: expiresAt,
    });
    return { row, token };
  }

  async revokeToken(userId: string, tokenId: string): Promise<void> {
    if (!(await this.d.pats.revoke(userId, tokenId, this.d.now().toISOString()))) throw new NotFoundError('no such token');
  }
}
