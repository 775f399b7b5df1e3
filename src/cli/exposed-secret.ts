/**
 * Where a secret given as a command-line argument is still readable by every user of the
 * machine. This process can hide its own arguments (process.title), but not those of the
 * processes that started it: `npx pier runner executor --api-key=KEY` leaves the key in the
 * command lines of `npm exec …` and `sh -c pier …` for as long as the executor runs, and
 * /proc/<pid>/cmdline is world-readable (proc(5)).
 */
import fs from 'node:fs';

export interface ExposingProcess {
  pid: number;
  /** Its command line with the secret masked, cut to a readable length. */
  command: string;
}

const MAX_SHOWN = 80;

function parentOf(pid: number): number | null {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
  } catch {
    return null;
  }
}

/** The ancestors of this process (up to, not including, init) whose command line holds `secret`. */
export function ancestorsShowing(secret: string): ExposingProcess[] {
  if (secret === '' || process.platform !== 'linux') return [];
  const found: ExposingProcess[] = [];
  const seen = new Set<number>();
  for (let pid = parentOf(process.pid); pid !== null && pid > 1 && !seen.has(pid); pid = parentOf(pid)) {
    seen.add(pid);
    let cmdline: string;
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      break;
    }
    if (!cmdline.includes(secret)) continue;
    const shown = cmdline.split('\0').join(' ').trim().split(secret).join('***');
    found.push({ pid, command: shown.length > MAX_SHOWN ? `${shown.slice(0, MAX_SHOWN - 1)}…` : shown });
  }
  return found;
}
