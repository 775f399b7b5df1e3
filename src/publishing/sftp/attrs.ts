import type { Attributes, FileEntry } from 'ssh2';
import type { StoredEntry } from '../../infra/storage.js';

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;

export interface Described {
  type: 'file' | 'dir';
  size: number;
  mtimeMs: number;
  readOnly?: boolean;
}

/** SFTP v3 ATTRS. Permissions are fixed (what we store does not keep them; SETSTAT ignores them). */
export function attrsOf(d: Described): Attributes {
  const perm = d.type === 'dir' ? (d.readOnly ? 0o555 : 0o755) : 0o644;
  const seconds = Math.floor(d.mtimeMs / 1000);
  return { mode: (d.type === 'dir' ? S_IFDIR : S_IFREG) | perm, uid: 0, gid: 0, size: d.size, atime: seconds, mtime: seconds };
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `ls -l` line that v3 clients (OpenSSH `ls -l`, lftp, FileZilla) show as is. */
export function longname(name: string, d: Described, now = Date.now()): string {
  const t = new Date(d.mtimeMs);
  const recent = Math.abs(now - d.mtimeMs) < 182 * 86_400_000;
  const day = String(t.getUTCDate()).padStart(2, ' ');
  const when = recent
    ? `${MONTHS[t.getUTCMonth()]} ${day} ${String(t.getUTCHours()).padStart(2, '0')}:${String(t.getUTCMinutes()).padStart(2, '0')}`
    : `${MONTHS[t.getUTCMonth()]} ${day}  ${t.getUTCFullYear()}`;
  const perm = d.type === 'dir' ? (d.readOnly ? 'dr-xr-xr-x' : 'drwxr-xr-x') : '-rw-r--r--';
  return `${perm}    1 pier     pier     ${String(d.size).padStart(8, ' ')} ${when} ${name}`;
}

export function entryOf(e: StoredEntry): FileEntry {
  return { filename: e.name, longname: longname(e.name, e), attrs: attrsOf(e) };
}
