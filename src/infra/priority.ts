import fs from 'node:fs';
import os from 'node:os';

/**
 * Lowers the CPU priority of every thread of this process to at least `nice` (never raises a
 * thread already nicer). Linux keeps one nice value per thread (setpriority(2) with a thread
 * id), and the threads V8 and libuv start before any of our code runs (garbage collection,
 * the file system pool) would otherwise keep the priority the process started with. Threads
 * started later take the priority of the thread that starts them. Elsewhere only the process's
 * own value is set. Returns false when the system does not allow it.
 */
export function lowerOwnPriority(nice: number): boolean {
  let tids: number[];
  try {
    tids = fs.readdirSync('/proc/self/task').map(Number).filter((t) => t > 0);
  } catch {
    tids = [];
  }
  try {
    if (tids.length === 0) {
      os.setPriority(Math.max(os.getPriority(), nice));
      return true;
    }
    for (const tid of tids) {
      try {
        if (os.getPriority(tid) < nice) os.setPriority(tid, nice);
      } catch (e) {
        // A thread that ended between the listing and now.
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    }
    return true;
  } catch {
    return false;
  }
}
