import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';

const { utils } = ssh2;

export interface HostKey {
  type: string;
  /** OpenSSH private key text (what ssh2's `hostKeys` takes). */
  privateKey: string;
  /** `SHA256:…` as `ssh-keygen -lf` and the client's first-connect prompt print it. */
  fingerprint: string;
}

/** ed25519 first; ECDSA P-256 for clients without ed25519 (older WinSCP/FileZilla, Java). */
const KINDS = [
  { file: 'ssh_host_ed25519_key', generate: () => utils.generateKeyPairSync('ed25519') },
  { file: 'ssh_host_ecdsa_key', generate: () => utils.generateKeyPairSync('ecdsa', { bits: 256 }) },
] as const;

export function fingerprintOf(publicBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicBlob).digest('base64').replace(/=+$/, '')}`;
}

/**
 * ssh2's key generator drops a leading zero byte of an ed25519 public key (about 1 key in 256),
 * and its own parser then refuses the key: generate again until the key reads back.
 */
function generateValid(generate: () => { private: string }): string {
  for (let i = 0; i < 20; i++) {
    const text = generate().private;
    if (!(utils.parseKey(text) instanceof Error)) return text;
  }
  throw new Error('could not generate a valid SSH host key');
}

function parse(text: string, file: string): HostKey {
  const parsed = utils.parseKey(text);
  if (parsed instanceof Error) throw new Error(`cannot read SSH host key ${file}: ${parsed.message}`);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key) throw new Error(`no key in ${file}`);
  return { type: key.type, privateKey: text, fingerprint: fingerprintOf(key.getPublicSSH()) };
}

/**
 * The SSH host keys, generated at first start. They live in `dir` (a folder of the shared
 * storage location by default), so every instance behind one address presents the same keys
 * (DESIGN.md: what instances must agree on never lives in one instance's memory). Creation is
 * create-if-absent (link(2) fails when the name exists), so two instances starting at once
 * still end up with one key each kind.
 */
export function loadOrCreateHostKeys(dir: string): HostKey[] {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return KINDS.map(({ file, generate }) => {
    const target = path.join(dir, file);
    if (!fs.existsSync(target)) {
      const temp = path.join(dir, `.${file}.${randomBytes(6).toString('hex')}`);
      fs.writeFileSync(temp, generateValid(generate), { mode: 0o600 });
      try {
        fs.linkSync(temp, target);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      } finally {
        fs.rmSync(temp, { force: true });
      }
    }
    return parse(fs.readFileSync(target, 'utf8'), target);
  });
}

/** Where the keys live: beside the stored files, under a name no product or key can take. */
export function hostKeyDir(storageDir: string): string {
  return path.join(storageDir, '.pier-host-keys');
}
