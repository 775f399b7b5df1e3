import type { Readable } from 'node:stream';
import { ConcurrencyLimit } from '../../infra/concurrency-limit.js';
import { NotFoundError, TooManyRequestsError } from '../../infra/errors.js';
import { randomUUID } from '../../infra/secrets.js';
import type { Principal } from '../auth/authenticate.js';
import { loadProject, loadWorkflow, type ScopeRepositories } from '../projects/access.js';
import type { RunOutputStorage } from '../runs/output-storage.js';
import type { DeclaredParametersReader } from './isolated-declared.js';
import { ProjectStorageFullError } from './quota.js';
import type { StorageFull, VersionListing, WorkflowRow, WorkflowWithParameters } from './repository.js';
import type { WorkflowStorage } from './storage.js';
import { type PartSource, readUpload } from './upload.js';

/** The text fields of a new workflow. */
export interface WorkflowText {
  name: string;
  description: string;
}

export interface WorkflowsDeps extends ScopeRepositories {
  storage: WorkflowStorage;
  outputs: RunOutputStorage;
  /** Reads the parameters an archive declares, off the serving event loop. */
  declared: DeclaredParametersReader;
  /** Bytes the stored versions of one project may take together (RUNNER_PROJECT_STORAGE_BYTES; 0: no limit). */
  projectStorageBytes: number;
  now: () => Date;
}

const isFull = (r: object | undefined): r is StorageFull => r !== undefined && 'full' in r;

const userIdOf = (p: Principal) => (p.type === 'user' ? p.user.id : null);

/**
 * Uploads of one user stored and read at once (the admin key counts as one user). Reading an
 * archive's settings takes the one worker up to seconds, in turn with every user's uploads: a
 * user sending many at once would otherwise fill its queue, and everyone else's upload would be
 * refused or wait behind them. Past this, 429 before the body is read.
 */
export const UPLOADS_PER_USER = 2;
/** In all, a bound of the files being written at once. */
const UPLOADS_IN_ALL = 64;
const UPLOAD_RETRY_SECONDS = 2;

/** Workflows of a project, their numbered versions and the stored archives. Editors change them. */
export class WorkflowsService {
  private readonly uploads = new ConcurrencyLimit(UPLOADS_PER_USER, UPLOADS_IN_ALL);

  constructor(private readonly d: WorkflowsDeps) {}

  /** Runs an upload within its user's share of the uploads at once (UPLOADS_PER_USER). */
  private async admitted<T>(p: Principal, upload: () => Promise<T>): Promise<T> {
    const caller = userIdOf(p) ?? 'api-key';
    if (!this.uploads.enter(caller)) {
      throw new TooManyRequestsError(`at most ${UPLOADS_PER_USER} of your uploads are stored and read at once (and ${UPLOADS_IN_ALL} in all); send the next one when one is answered`, UPLOAD_RETRY_SECONDS);
    }
    try {
      return await upload();
    } finally {
      this.uploads.leave(caller);
    }
  }

  async list(p: Principal, projectId: string): Promise<WorkflowRow[]> {
    await loadProject(this.d, p, projectId, 'read');
    return this.d.workflows.listByProject(projectId);
  }

  /**
   * Workflows with the parameters their latest version declares: of one project (viewers and up),
   * or of every project the caller can read. At most `limit`, by name.
   */
  async listWithParameters(p: Principal, projectId: string | undefined, limit: number): Promise<WorkflowWithParameters[]> {
    if (projectId !== undefined) await loadProject(this.d, p, projectId, 'read');
    const everyProject = projectId !== undefined || p.type === 'api-key' || p.user.role === 'admin';
    return this.d.workflows.listWithLatest({ memberUserId: everyProject ? null : p.user.id, projectId, limit });
  }

  /**
   * A new workflow whose version 1 is the uploaded archive (name default: the file name).
   * `check` applies the route's rules for name and description (those of the JSON bodies) to the
   * text as sent, the default name included; the name is stored trimmed, as everywhere.
   */
  create(p: Principal, projectId: string, parts: PartSource, check: (text: WorkflowText) => void): Promise<{ workflow: WorkflowRow; versions: VersionListing[] }> {
    return this.admitted(p, () => this.storeNew(p, projectId, parts, check));
  }

  private async storeNew(
    p: Principal,
    projectId: string,
    parts: PartSource,
    check: (text: WorkflowText) => void,
  ): Promise<{ workflow: WorkflowRow; versions: VersionListing[] }> {
    await loadProject(this.d, p, projectId, 'write');
    const id = randomUUID();
    // A new workflow's folder goes with any refusal, also one while the parts are read (an
    // archive that is not a zip): a refused request stores nothing, not even an empty folder.
    const { fields, file } = await readUpload(parts, this.d.storage, id, ['name', 'description']).catch(async (e: unknown) => {
      await this.d.storage.removeWorkflow(id);
      throw e;
    });
    try {
      const text = { name: fields.name ?? file.fileName.replace(/\.knwf$/i, ''), description: fields.description ?? '' };
      check(text);
      const name = text.name.trim();
      const now = this.d.now().toISOString();
      const userId = userIdOf(p);
      const workflow = await this.d.workflows.createWithin(
        { id, project_id: projectId, name, description: text.description, created_by: userId, created_at: now, updated_at: now },
        { ...(await this.declared(file.storageKey)), file_name: file.fileName, size: file.size, sha256: file.sha256, storage_key: file.storageKey, created_by: userId, created_at: now },
        this.d.projectStorageBytes,
      );
      // The quota is checked where the row would be written, in one transaction with it; the
      // archive written meanwhile goes with the refusal (the catch below).
      if (isFull(workflow)) throw new ProjectStorageFullError(workflow.full, file.size);
      return { workflow, versions: await this.d.workflows.versions(id) };
    } catch (e) {
      await this.d.storage.removeWorkflow(id);
      throw e;
    }
  }

  /** The parameters the stored archive's configuration nodes declare, as the version row keeps them. */
  private async declared(storageKey: string): Promise<{ declared_parameters: string }> {
    return { declared_parameters: JSON.stringify(await this.d.declared.read(this.d.storage.localPath(storageKey))) };
  }

  async get(p: Principal, id: string): Promise<{ workflow: WorkflowRow; versions: VersionListing[] }> {
    const workflow = await loadWorkflow(this.d, p, id, 'read');
    return { workflow, versions: await this.d.workflows.versions(id) };
  }

  async versions(p: Principal, id: string): Promise<VersionListing[]> {
    await loadWorkflow(this.d, p, id, 'read');
    return this.d.workflows.versions(id);
  }

  /**
   * Deletes the workflow with its versions and runs, then its archives and the runs' output
   * files. Files go after the rows: an upload racing the delete either finds its run gone and
   * stores nothing, or has put its file in place before the files are removed.
   */
  async delete(p: Principal, id: string): Promise<void> {
    await loadWorkflow(this.d, p, id, 'write');
    const runIds = await this.d.workflows.delete(id);
    if (runIds === null) throw new NotFoundError('no such workflow');
    for (const runId of runIds) await this.d.outputs.removeRun(runId);
    await this.d.storage.removeWorkflow(id);
  }

  /** Stores the upload as the next version number (numbers have no gaps, even when racing). */
  addVersion(p: Principal, id: string, parts: PartSource): Promise<VersionListing> {
    return this.admitted(p, () => this.storeVersion(p, id, parts));
  }

  private async storeVersion(p: Principal, id: string, parts: PartSource): Promise<VersionListing> {
    await loadWorkflow(this.d, p, id, 'write');
    const { file } = await readUpload(parts, this.d.storage, id, []);
    // Read before the row is written; a refusal (a busy reader) keeps no file.
    const declared = await this.declared(file.storageKey).catch(async (e: unknown) => {
      await this.d.storage.remove(file.storageKey);
      throw e;
    });
    const now = this.d.now().toISOString();
    const row = await this.d.workflows
      .addNextVersionWithin(
        {
          ...declared,
          workflow_id: id,
          file_name: file.fileName,
          size: file.size,
          sha256: file.sha256,
          storage_key: file.storageKey,
          created_by: userIdOf(p),
          created_at: now,
        },
        now,
        this.d.projectStorageBytes,
      )
      .catch(async (e: unknown) => {
        await this.d.storage.remove(file.storageKey);
        throw e;
      });
    if (isFull(row)) {
      await this.d.storage.remove(file.storageKey);
      throw new ProjectStorageFullError(row.full, file.size);
    }
    if (row) return (await this.d.workflows.version(id, row.version)) ?? { ...row, author_name: null, author_email: null };
    await this.d.storage.remove(file.storageKey);
    throw new NotFoundError('no such workflow');
  }

  /** A stored archive to send (executors fetch it with the admin key). */
  async download(p: Principal, id: string, version: number): Promise<{ version: VersionListing; stream: Readable }> {
    await loadWorkflow(this.d, p, id, 'read');
    const v = await this.d.workflows.version(id, version);
    if (!v || !(await this.d.storage.exists(v.storage_key))) throw new NotFoundError('no such workflow version');
    return { version: v, stream: this.d.storage.open(v.storage_key) };
  }
}
