/**
 * What an open SFTP session may still do with the credential it logged in with. The database
 * decides (a rotation by `pier staff`, a binding removed, possibly through another instance):
 *
 * - `current`: anything.
 * - `expired` (a trusted-publishing credential past its 15 minutes): transfers in progress
 *   finish (their WRITEs, READs and the CLOSE that commits an upload); anything new (OPEN,
 *   OPENDIR, MKDIR, RMDIR, REMOVE, RENAME, SETSTAT) is refused, and the session ends once it
 *   has nothing in progress. The credential logs nothing in any more either.
 * - `revoked` (the password rotated, the trusted credential revoked): the session ends now, and
 *   an upload in progress is discarded at its CLOSE.
 *
 * The state is read before every request that opens or changes something; a `current` answer
 * is reused for read-only opens (downloads, listings) for `freshMs`, so a client fetching many
 * small files costs a read a second, not one per file. A state never goes back to `current`.
 */
import { CredentialRevokedError, type CredentialUse } from './refusals.js';

export type CredentialState = 'current' | 'expired' | 'revoked';

export interface CredentialWatchOptions {
  /** The credential's state in the database now. */
  read(): Promise<CredentialState>;
  /** Whether a transfer or listing is in progress on the connection. */
  busy(): boolean;
  /** Ends the connection; called once. */
  end(why: 'expired' | 'revoked'): void;
  /** What a refused request is told. */
  messages: { expired: string; revoked: string };
  /** How long a `current` answer serves read-only opens (1 s unless set). */
  freshMs?: number;
  now?: () => number;
}

export interface CredentialWatch {
  /** Before a request: throws CredentialRevokedError when the credential no longer allows `use`. */
  check(use: CredentialUse): Promise<void>;
  /** The periodic check: ends the session once revoked, or expired with nothing in progress. */
  poll(): Promise<void>;
  /** The session has nothing in progress any more: ends it if its credential expired. */
  idle(): void;
}

export function credentialWatch(options: CredentialWatchOptions): CredentialWatch {
  const now = options.now ?? (() => performance.now());
  const freshMs = options.freshMs ?? 1000;
  let state: CredentialState = 'current';
  let readAt = Number.NEGATIVE_INFINITY;
  let ended = false;

  const refresh = async (): Promise<void> => {
    const read = await options.read();
    readAt = now();
    if (read === 'revoked' || (read === 'expired' && state === 'current')) state = read;
  };

  const settle = (): void => {
    if (ended || state === 'current' || (state === 'expired' && options.busy())) return;
    ended = true;
    const why = state;
    setImmediate(() => options.end(why));
  };

  return {
    async check(use) {
      // Expired: only a finishing transfer still asks (a revocation discards it); revoked: nobody.
      const ask = state === 'current' ? use !== 'read' || now() - readAt >= freshMs : state === 'expired' && use === 'finish';
      if (ask) await refresh();
      if (state === 'revoked') {
        settle();
        throw new CredentialRevokedError(options.messages.revoked);
      }
      if (state === 'expired' && use !== 'finish') throw new CredentialRevokedError(options.messages.expired);
    },
    async poll() {
      if (state !== 'revoked') await refresh();
      settle();
    },
    idle() {
      settle();
    },
  };
}
