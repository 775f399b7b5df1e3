/**
 * Trust on first use, remembered: when nothing tells `pier publish` which host key the SFTP
 * server has (no --host-key, no keys listed by the server), the first key seen is accepted,
 * printed, and kept here per host and port; a later different key is refused, as OpenSSH's
 * known_hosts does.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function knownHostsFile(env: Record<string, string | undefined>): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'pier', 'known_hosts.json');
}

export function rememberedKey(file: string, hostPort: string): string | null {
  try {
    const known = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
    return typeof known[hostPort] === 'string' ? known[hostPort] : null;
  } catch {
    return null;
  }
}

export function rememberKey(file: string, hostPort: string, fingerprint: string): void {
  let known: Record<string, string> = {};
  try {
    known = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  } catch {
    // First key of this machine.
  }
  known[hostPort] = fingerprint;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(known, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temp, file);
}
