import { AppError } from '../../infra/errors.js';
import type { StorageUsage } from './repository.js';

/**
 * An upload refused because the project's stored workflow versions would pass its quota
 * (RUNNER_PROJECT_STORAGE_BYTES). 409, not 413: the body itself is within the size limit; the
 * state of the project conflicts with it, and deleting what it stores resolves that (RFC 9110
 * §15.5.10: the user might be able to resolve the conflict and resubmit).
 */
export class ProjectStorageFullError extends AppError {
  constructor(
    readonly usage: StorageUsage,
    adding: number,
  ) {
    const detail =
      `the project's workflow versions take ${usage.usedBytes} of its ${usage.limitBytes} bytes of storage; ` +
      `this archive of ${adding} bytes does not fit. Deleting workflows that are no longer needed frees their versions' room`;
    super(409, 'project_storage_full', 'Project storage full', detail, [
      { field: 'file', message: `does not fit the project's storage: ${usage.usedBytes} of ${usage.limitBytes} bytes used` },
    ]);
    this.name = 'ProjectStorageFullError';
  }
}
