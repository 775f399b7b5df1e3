import { OUTPUT_TEMP_DIR } from '../runs/output-storage.js';
import { isTemporaryArchiveName } from '../workflows/storage.js';

/**
 * What of RUNNER_STORAGE_DIR a backup holds: the workflow archives and the run outputs, the
 * only files the runner stores there (LocalWorkflowStorage, LocalRunOutputStorage).
 */
export const RUNNER_STORAGE_FOLDERS = ['workflows', 'outputs'];

/** Uploads in flight (an archive's temporary name, the outputs' temporary folder): never part of a backup. */
export function isRunnerTransient(relPath: string, isDir: boolean): boolean {
  if (isDir) return relPath === `outputs/${OUTPUT_TEMP_DIR}`;
  const parts = relPath.split('/');
  return parts[0] === 'workflows' && isTemporaryArchiveName(parts[parts.length - 1]!);
}
