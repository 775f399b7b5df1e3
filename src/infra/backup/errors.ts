/**
 * Named errors of `pier backup` / `pier restore`. The CLI prints their message as is (never a
 * stack) and picks the exit code from the class, so scripts can tell the cases apart.
 */

/** The backup or restore could not be done (a tool is missing, a database refused, a disk error). */
export class BackupError extends Error {
  readonly exitCode: number = 1;
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

/** `pier restore` refused its target: it is not empty, or it does not fit the backup (dialects). */
export class RestoreRefusedError extends BackupError {
  override readonly exitCode: number = 3;
  constructor(message: string) {
    super(message);
    this.name = 'RestoreRefusedError';
  }
}

/** A backup that fails its checks (`--verify`, or before a restore): every problem, one per line. */
export class BackupDamagedError extends BackupError {
  override readonly exitCode: number = 2;
  constructor(readonly problems: string[]) {
    super(`the backup has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'BackupDamagedError';
  }
}
