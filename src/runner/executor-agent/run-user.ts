import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A user the executor runs commands as (`--run-as`): the executor runs as root and gives each run
 * one of these users, which no other run holds meanwhile. Every process of that user is ended
 * before the run starts and again once its command has ended, so nothing one run leaves behind
 * can touch the next run's folder, outputs or archive.
 */
export interface RunUser {
  name: string;
  uid: number;
  gid: number;
}

/** A `--run-as` user that cannot be used, named in the message. */
export class RunUserError extends Error {}

/** Looks each name up in the system's user database (`getent passwd`: local, LDAP, …). Start-up only. */
export function resolveRunUsers(names: string[], executorUid: number): RunUser[] {
  const users: RunUser[] = [];
  for (const name of names) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$/.test(name)) throw new RunUserError(`"${name}" is not a user name`);
    if (users.some((u) => u.name === name)) throw new RunUserError(`${name} is named twice`);
    const found = spawnSync('getent', ['passwd', name], { encoding: 'utf8', timeout: 10_000 });
    const fields = found.status === 0 ? found.stdout.split('\n')[0]!.split(':') : [];
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    if (fields[0] !== name || !Number.isInteger(uid) || !Number.isInteger(gid)) throw new RunUserError(`there is no user ${name} on this machine`);
    if (uid === 0) throw new RunUserError(`${name} is root: commands must run as an unprivileged user`);
    if (uid === executorUid) throw new RunUserError(`${name} is the executor's own user: it could read the admin key`);
    if (users.some((u) => u.uid === uid)) throw new RunUserError(`${name} has the same uid (${uid}) as another user named`);
    users.push({ name, uid, gid });
  }
  return users;
}

/**
 * Run as the user: signal -1 reaches every process that user may signal — all of its own —
 * except the sender, in one step (a process forking meanwhile is caught too: a fork with a
 * fatal signal pending fails). Sent as the user, so no other process can be hit.
 */
const KILL_ALL_OF_MINE = "try { process.kill(-1, 'SIGKILL'); } catch {}";

function killAllAs(user: RunUser): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', KILL_ALL_OF_MINE], { uid: user.uid, gid: user.gid, cwd: '/', env: {}, stdio: 'ignore' });
    child.on('error', () => resolve());
    child.on('close', () => resolve());
  });
}

/** Pids of the live (not zombie) processes whose real or saved uid is `uid`, from /proc (Linux). */
export async function processesOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await fs.promises.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const status = await fs.promises.readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
    const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status);
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (!uids || state === 'Z' || state === 'X') continue;
    if (Number(uids[1]) === uid || Number(uids[3]) === uid) pids.push(Number(name));
  }
  return pids;
}

/**
 * Ends every process of `user` and waits (bounded) until /proc shows none: answers how many there
 * were. Those still shown after that have SIGKILL pending and run no more of their own code.
 */
export async function endProcessesOf(user: RunUser): Promise<{ found: number; left: number }> {
  const found = (await processesOf(user.uid)).length;
  if (found === 0) return { found, left: 0 };
  let left = found;
  for (let round = 0; round < 3 && left > 0; round++) {
    await killAllAs(user);
    for (let i = 0; i < 100; i++) {
      left = (await processesOf(user.uid)).length;
      if (left === 0) break;
      await sleep(20);
    }
  }
  return { found, left };
}

/** The same, synchronously, on a fatal error: SIGKILL to every process of these users now. */
export function endProcessesNow(users: RunUser[]): void {
  for (const user of users) spawnSync(process.execPath, ['-e', KILL_ALL_OF_MINE], { uid: user.uid, gid: user.gid, cwd: '/', env: {}, stdio: 'ignore', timeout: 10_000 });
}
