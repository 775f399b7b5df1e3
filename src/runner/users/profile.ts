import { AppError, ConflictError, NotFoundError } from '../../infra/errors.js';
import { generateToken, hasValidChecksum, sha256 } from '../../infra/secrets.js';
import type { EmailProofsRepository } from './email-proofs-repository.js';
import { normalizeEmail, type UserRow, type UsersRepository } from './repository.js';
import { getUser, updateUser } from './service.js';

/** Prefix of the token in an address-proof link. */
export const EMAIL_PROOF_PREFIX = 'rnr_emp_';
/** How long the link sent to a new address works. */
export const EMAIL_PROOF_TTL_MS = 24 * 3_600_000;
/** The web UI's page that a proof link opens (the token in the fragment stays out of logs). */
export const EMAIL_PROOF_PATH = '/account/email';

/** How the runner sends mail. None is configured yet; only then can users change their own address. */
export interface EmailSender {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
}

/**
 * A user changed their own address without a way to prove it. Addresses name people to others
 * (invitations go to an address), so an unproven one cannot be taken on one's own say.
 */
export class EmailChangeNeedsAdminError extends AppError {
  constructor() {
    const detail = 'this runner sends no mail, so a new address cannot be proven; ask an administrator to change your email';
    super(403, 'email_change_needs_admin', 'Forbidden', detail, [{ field: 'email', message: detail }]);
    this.name = 'EmailChangeNeedsAdminError';
  }
}

export interface ProfileDeps {
  users: UsersRepository;
  proofs: EmailProofsRepository;
  /** null: no mail configured, so only administrators set addresses. */
  sender: EmailSender | null;
  runnerUrl: string;
  now: () => Date;
}

export interface ProfileChange {
  user: UserRow;
  /** The new address waiting for its proof (its link was mailed), or null. */
  pendingEmail: string | null;
}

/**
 * The signed-in user's own profile. A name changes at once. An address changes at once only for
 * administrators (who set everyone's); anyone else's new address takes effect once the link
 * mailed to it is opened by the same account, and without mail it is refused.
 */
export class ProfileService {
  constructor(private readonly d: ProfileDeps) {}

  async update(user: UserRow, changes: { name?: string; email?: string }): Promise<ProfileChange> {
    const email = changes.email === undefined ? undefined : normalizeEmail(changes.email);
    const newAddress = email !== undefined && email !== user.email;
    const direct = user.role === 'admin' || !newAddress;
    // Refused before anything is stored: the name is not changed by a refused request either.
    if (!direct && this.d.sender === null) throw new EmailChangeNeedsAdminError();
    const now = this.d.now();
    const immediate = { ...(changes.name !== undefined ? { name: changes.name } : {}), ...(direct && newAddress ? { email } : {}) };
    const updated = Object.keys(immediate).length ? await updateUser(this.d.users, user.id, immediate, now) : await getUser(this.d.users, user.id);
    if (direct || email === undefined || this.d.sender === null) return { user: updated, pendingEmail: null };
    const token = generateToken(EMAIL_PROOF_PREFIX);
    await this.d.proofs.put({
      user_id: user.id,
      email,
      token_hash: sha256(token),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + EMAIL_PROOF_TTL_MS).toISOString(),
    });
    // Whether another account holds the address is not said here (that would tell who has an
    // account); it is checked when the proof comes back.
    await this.d.sender.send({
      to: email,
      subject: 'Confirm your new address for the Pier runner',
      text: `Open this link, signed in as ${updated.email}, to make ${email} your address:\n\n${this.d.runnerUrl}${EMAIL_PROOF_PATH}#token=${token}\n\nIt works for 24 hours. If you did not ask for this, ignore this message.`,
    });
    return { user: updated, pendingEmail: email };
  }

  /** The proof link opened by the account that asked: the pending address becomes its address. */
  async confirmEmail(user: UserRow, token: string): Promise<UserRow> {
    const outcome = hasValidChecksum(token, EMAIL_PROOF_PREFIX) ? await this.d.proofs.apply(user.id, sha256(token), this.d.now().toISOString()) : 'absent';
    if (outcome === 'absent') throw new NotFoundError('this link is not valid for your account, was used or has expired; change the address again');
    if (outcome === 'taken') throw new ConflictError('another account has this email now', 'email_taken');
    return getUser(this.d.users, user.id);
  }
}
