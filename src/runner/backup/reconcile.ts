import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { RunnerDB } from '../db/schema.js';
import { LocalRunOutputStorage } from '../runs/output-storage.js';
import { LocalWorkflowStorage } from '../workflows/storage.js';
import { WorkflowsRepository } from '../workflows/repository.js';
import { type OutputRecord, StoredFileRecordsRepository } from './repository.js';

/** What a restore changed so that the runner's records and its restored files agree. */
export interface RunnerReconcileResult {
  /** Workflows deleted because an archive of theirs was not in the backup (they were deleted after the snapshot). */
  workflowsDeleted: string[];
  /** Archives no workflow version records (uploaded after the snapshot). */
  archivesRemoved: number;
  /** Output records whose file was not in the backup. */
  outputRecordsDropped: number;
  /** Output records changed to the size and sha256 of the file stored under their name (replaced after the snapshot). */
  outputRecordsCorrected: number;
  /** Output files no record names (another attempt's, a run the snapshot does not have, uploaded after it). */
  outputFilesRemoved: number;
}

/** Size and sha256 of a restored file, by its path below RUNNER_STORAGE_DIR (from the backup's manifest). */
export type KnownFile = (relPath: string) => { size: number; sha256: string } | undefined;

const isFile = (p: string) => fs.lstatSync(p, { throwIfNoEntry: false })?.isFile() ?? false;

function facts(root: string, rel: string, known: KnownFile): { size: number; sha256: string } {
  const k = known(rel);
  if (k) return k;
  const data = fs.readFileSync(path.join(root, rel));
  return { size: data.length, sha256: createHash('sha256').update(data).digest('hex') };
}

/** Entries of a folder ([] when it is missing). */
const entries = (dir: string): fs.Dirent[] => (fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []);

/**
 * Makes the records of a restored runner and its restored files agree: a backup snapshots the
 * database first and copies the files after, so uploads, deletes and runs in between leave them
 * apart (infra/backup/take.ts). Files win, as the publishing side's reconcile does, except
 * where a file has no record to follow it:
 *
 * - A workflow version whose archive is missing: the workflow was deleted after the snapshot
 *   (archives are never removed one by one), so it is deleted here too, with its runs.
 * - An archive no version records: uploaded after the snapshot; removed.
 * - An output record whose file is missing: removed after the snapshot (run deleted, attempt
 *   lost, cancelled); the record is dropped.
 * - An output record whose file differs: re-uploaded after the snapshot; the record takes the
 *   file's size and sha256 (the file is a whole upload: outputs are renamed into place).
 * - An output file no record names (run or attempt unknown to the snapshot, or uploaded after
 *   it): removed, as the runner never serves it.
 *
 * Runs on a restored deployment before anything serves it, so nothing races with it.
 */
export async function reconcileRunnerFiles(db: Kysely<RunnerDB>, storageDir: string, known: KnownFile): Promise<RunnerReconcileResult> {
  const records = new StoredFileRecordsRepository(db);
  const archives = new LocalWorkflowStorage(storageDir);
  const outputs = new LocalRunOutputStorage(storageDir);
  const result: RunnerReconcileResult = { workflowsDeleted: [], archivesRemoved: 0, outputRecordsDropped: 0, outputRecordsCorrected: 0, outputFilesRemoved: 0 };

  // Workflows whose archives are missing go first: their runs' outputs go with them.
  const versions = await records.archives();
  const broken = new Set(versions.filter((v) => !isFile(archives.localPath(v.storage_key))).map((v) => v.workflow_id));
  const workflows = new WorkflowsRepository(db);
  for (const id of broken) {
    for (const runId of (await workflows.delete(id)) ?? []) await outputs.removeRun(runId);
    await archives.removeWorkflow(id);
    result.workflowsDeleted.push(id);
  }
  const kept = new Set(versions.filter((v) => !broken.has(v.workflow_id)).map((v) => v.storage_key));
  for (const dir of entries(archives.root)) {
    const abs = path.join(archives.root, dir.name);
    if (!dir.isDirectory()) {
      fs.rmSync(abs, { force: true });
      result.archivesRemoved++;
      continue;
    }
    for (const f of entries(abs)) {
      if (f.isFile() && kept.has(`${dir.name}/${f.name}`)) continue;
      fs.rmSync(path.join(abs, f.name), { recursive: true, force: true });
      result.archivesRemoved++;
    }
    if (entries(abs).length === 0) fs.rmdirSync(abs);
  }

  // Output records follow the files stored for their run's current attempt.
  const byRun = new Map<string, OutputRecord[]>();
  for (const r of await records.outputs()) byRun.set(r.run_id, [...(byRun.get(r.run_id) ?? []), r]);
  const keep = new Set<string>();
  for (const [runId, rows] of byRun) {
    for (const row of rows) {
      // Outputs stored before they were kept per attempt lie in the run's folder (see LocalRunOutputStorage.open).
      const candidates = [`outputs/${runId}/${row.attempt}/${row.name}`, `outputs/${runId}/${row.name}`];
      const rel = candidates.find((c) => isFile(path.join(storageDir, c)));
      if (!rel) {
        await records.dropOutput(runId, row.name);
        result.outputRecordsDropped++;
        continue;
      }
      keep.add(rel);
      const file = facts(storageDir, rel, known);
      if (file.size !== row.size || (row.sha256 !== null && file.sha256 !== row.sha256)) {
        await records.correctOutput(runId, row.name, file.size, file.sha256);
        result.outputRecordsCorrected++;
      }
    }
  }
  // Everything else below outputs/ goes: no record names it (a run the snapshot does not have
  // has no records at all).
  const sweep = (abs: string, rel: string): void => {
    for (const e of entries(abs)) {
      const childAbs = path.join(abs, e.name);
      const childRel = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        sweep(childAbs, childRel);
        // Folders of runs and attempts that hold nothing any more.
        if (entries(childAbs).length === 0) fs.rmdirSync(childAbs);
      } else if (!keep.has(childRel)) {
        fs.rmSync(childAbs, { force: true });
        result.outputFilesRemoved++;
      }
    }
  };
  sweep(outputs.root, 'outputs');
  return result;
}
