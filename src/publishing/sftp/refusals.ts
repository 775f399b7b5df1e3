/**
 * How an SFTP request is refused: each refusal carries its SFTP status (draft-ietf-secsh-filexfer-02
 * §7), and `statusOf` maps whatever a request threw to the status the client gets.
 */
import ssh2 from 'ssh2';
import { storageErrorCode } from '../../infra/storage.js';
import { QuotaExceededError } from '../files/service.js';

const { STATUS_CODE } = ssh2.utils.sftp;

/** What a request does with the session's credential: opens to read, changes files, or finishes a transfer. */
export type CredentialUse = 'read' | 'change' | 'finish';

/** A request refused because the session's credential was rotated, revoked or expired since it logged in. */
export class CredentialRevokedError extends Error {
  constructor(message = 'The SFTP password was changed: log in again with the new one') {
    super(message);
    this.name = 'CredentialRevokedError';
  }
}

/** A refusal with its SFTP status; anything else thrown is an internal error. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const deny = (msg: string) => new Refusal(STATUS_CODE.PERMISSION_DENIED, msg);
export const missing = (msg = 'No such file') => new Refusal(STATUS_CODE.NO_SUCH_FILE, msg);
export const failure = (msg: string) => new Refusal(STATUS_CODE.FAILURE, msg);

/**
 * A resumed upload (OpenSSH and psftp `reput`, lftp `put -c`, curl `-C`) continues the file at
 * its path from its size on. Uploads here are atomic, so an interrupted one leaves the previous
 * version at the path, not the partial file: continuing would stitch the previous version's
 * head to the new file's tail. Appending to a stored file, or a first write at or past its end
 * without TRUNC, is refused instead, and the stored file stays as it was.
 */
export const RESUME_REFUSED =
  'Resuming or appending to a stored file is not supported: uploads replace whole files (use put, not reput)';
export const unsupported = (msg: string) => new Refusal(STATUS_CODE.OP_UNSUPPORTED, msg);

/**
 * The status a failed request answers with, or null for an internal error (logged, answered as
 * a bare failure): refusals, revoked credentials, quotas and storage errors never crash a session.
 */
export function statusOf(e: unknown): { status: number; message: string } | null {
  if (e instanceof Refusal) return { status: e.status, message: e.message };
  if (e instanceof CredentialRevokedError) return { status: STATUS_CODE.PERMISSION_DENIED, message: e.message };
  if (e instanceof QuotaExceededError) return { status: STATUS_CODE.FAILURE, message: e.message };
  const code = storageErrorCode(e);
  if (code === 'ENOENT') return { status: STATUS_CODE.NO_SUCH_FILE, message: 'No such file' };
  if (code === 'EEXIST') return { status: STATUS_CODE.FAILURE, message: 'Already exists' };
  if (code === 'ENOTEMPTY') return { status: STATUS_CODE.FAILURE, message: 'Folder not empty' };
  if (code === 'ENOTDIR') return { status: STATUS_CODE.FAILURE, message: 'Not a folder' };
  if (code === 'EISDIR') return { status: STATUS_CODE.FAILURE, message: 'Is a folder' };
  return null;
}
