import fs from 'node:fs';
import path from 'node:path';

/** Executor ids as the runner makes them; anything else in a state file is not ours. */
const EXECUTOR_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The executor id kept in `file`, or null when there is no such file yet. */
export function readExecutorState(file: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  let id: unknown;
  try {
    id = (JSON.parse(text) as { executorId?: unknown }).executorId;
  } catch {
    id = undefined;
  }
  if (typeof id !== 'string' || !EXECUTOR_ID.test(id)) {
    throw new Error(`${file} is not an executor state file; remove it to register as a new executor`);
  }
  return id;
}

/** Keeps the executor id in `file`: written to a temporary name and renamed, so it is never half there. */
export function writeExecutorState(file: string, executorId: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ executorId })}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}
