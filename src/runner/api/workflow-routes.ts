import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { NotFoundError, PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from '../../infra/errors.js';
import type { HttpApp } from '../../infra/http.js';
import { randomUUID } from '../../infra/secrets.js';
import { RUN_READ, USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { requireProjectAccess } from '../projects/access.js';
import type { WorkflowRow, WorkflowVersionRow } from '../workflows/repository.js';
import type { StoredFile } from '../workflows/storage.js';
import { multipartConfig } from './openapi.js';
import { errors, Id, IdParams, items, NoContent, PROTECTED, Timestamp } from './schemas.js';

/** Largest accepted workflow archive. */
export const MAX_WORKFLOW_BYTES = 100 * 1024 * 1024;

const Workflow = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  name: Type.String(),
  description: Type.String(),
  latestVersion: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const WorkflowVersion = Type.Object({
  workflowId: Type.String(),
  version: Type.Integer(),
  fileName: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  createdAt: Timestamp,
});

const WorkflowDetails = Type.Object({ ...Workflow.properties, versions: Type.Array(WorkflowVersion) });

function presentWorkflow(w: WorkflowRow) {
  return {
    id: w.id,
    projectId: w.project_id,
    name: w.name,
    description: w.description,
    latestVersion: w.latest_version,
    createdAt: w.created_at,
    updatedAt: w.updated_at,
  };
}

function presentVersion(v: WorkflowVersionRow) {
  return { workflowId: v.workflow_id, version: v.version, fileName: v.file_name, size: v.size, sha256: v.sha256, createdAt: v.created_at };
}

const UPLOAD_DOC = multipartConfig({
  fields: {
    file: { type: 'string', format: 'binary', description: 'the workflow archive (.knwf, a zip file)' },
    name: { type: 'string', maxLength: 200, description: 'workflow name (default: the file name without .knwf)' },
    description: { type: 'string', maxLength: 10000 },
  },
  required: ['file'],
});

const VERSION_DOC = multipartConfig({
  fields: { file: { type: 'string', format: 'binary', description: 'the workflow archive (.knwf, a zip file)' } },
  required: ['file'],
});

interface Upload {
  fields: Record<string, string>;
  file: (StoredFile & { fileName: string }) | null;
}

/** Reads a multipart upload with one `file` part, streaming the file into storage. */
async function readUpload(req: FastifyRequest, ctx: RunnerContext, workflowId: string, allowed: string[]): Promise<Upload> {
  if (!req.isMultipart()) throw new UnsupportedMediaTypeError('send the workflow as multipart/form-data with a "file" part');
  const out: Upload = { fields: {}, file: null };
  try {
    for await (const part of req.parts({ limits: { fileSize: MAX_WORKFLOW_BYTES, files: 1, fields: 10, fieldSize: 10_000 } })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          throw new ValidationError(`unknown file part "${part.fieldname}"`, [{ field: part.fieldname, message: 'unknown part; send the archive as "file"' }]);
        }
        const stored = await ctx.storage.save(workflowId, part.file, () => part.file.truncated, MAX_WORKFLOW_BYTES);
        out.file = { ...stored, fileName: part.filename || 'workflow.knwf' };
      } else {
        if (!allowed.includes(part.fieldname)) {
          throw new ValidationError(`unknown field "${part.fieldname}"`, [{ field: part.fieldname, message: 'unknown field' }]);
        }
        out.fields[part.fieldname] = String(part.value);
      }
    }
  } catch (e) {
    if (out.file) await ctx.storage.remove(out.file.storageKey);
    const code = (e as { code?: string }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw new PayloadTooLargeError(`the workflow archive is larger than ${MAX_WORKFLOW_BYTES} bytes`);
    if (code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
      throw new ValidationError('too many parts: send one "file" and at most the documented fields', [{ field: '(body)', message: 'too many parts' }]);
    }
    throw e;
  }
  if (!out.file) throw new ValidationError('the "file" part is required', [{ field: 'file', message: 'is required' }]);
  return out;
}

export async function registerWorkflowRoutes(app: HttpApp, ctx: RunnerContext): Promise<void> {
  const { workflows, projects, storage } = ctx;
  await app.register(multipart, { throwFileSizeLimit: true });

  async function loadWorkflow(req: FastifyRequest, id: string, need: 'read' | 'write'): Promise<WorkflowRow> {
    const wf = await workflows.findById(id);
    if (!wf) throw new NotFoundError('no such workflow');
    try {
      await requireProjectAccess(projects, principalOf(req), wf.project_id, need);
    } catch (e) {
      if (e instanceof NotFoundError) throw new NotFoundError('no such workflow');
      throw e;
    }
    return wf;
  }

  app.get(
    '/api/projects/:id/workflows',
    {
      config: access(USER_READ),
      schema: {
        tags: ['workflows'],
        summary: 'List the workflows of a project',
        operationId: 'listWorkflows',
        params: IdParams,
        response: { 200: items(Workflow), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      if (!(await projects.findById(req.params.id))) throw new NotFoundError('no such project');
      await requireProjectAccess(projects, principalOf(req), req.params.id, 'read');
      return { items: (await workflows.listByProject(req.params.id)).map(presentWorkflow) };
    },
  );

  app.post(
    '/api/projects/:id/workflows',
    {
      config: { ...access(USER_WRITE), ...UPLOAD_DOC },
      schema: {
        tags: ['workflows'],
        summary: 'Upload a workflow',
        description: `Multipart upload of a workflow archive (\`.knwf\`, a zip, at most ${MAX_WORKFLOW_BYTES} bytes) as version 1 of a new workflow. Needs the editor role.`,
        operationId: 'uploadWorkflow',
        params: IdParams,
        response: { 201: WorkflowDetails, ...errors(...PROTECTED, 404, 413, 415) },
      },
    },
    async (req, reply) => {
      if (!(await projects.findById(req.params.id))) throw new NotFoundError('no such project');
      const principal = principalOf(req);
      await requireProjectAccess(projects, principal, req.params.id, 'write');
      const id = randomUUID();
      const upload = await readUpload(req, ctx, id, ['name', 'description']);
      const file = upload.file!;
      const name = (upload.fields.name ?? file.fileName.replace(/\.knwf$/i, '')).trim();
      if (!name || name.length > 200) {
        await storage.removeWorkflow(id);
        throw new ValidationError('name must be 1-200 characters', [{ field: 'name', message: 'must be 1-200 characters' }]);
      }
      const now = ctx.now().toISOString();
      const userId = principal.type === 'user' ? principal.user.id : null;
      try {
        const wf = await workflows.create(
          { id, project_id: req.params.id, name, description: upload.fields.description ?? '', created_by: userId, created_at: now, updated_at: now },
          { file_name: file.fileName, size: file.size, sha256: file.sha256, storage_key: file.storageKey, created_by: userId, created_at: now },
        );
        return reply.code(201).send({ ...presentWorkflow(wf), versions: (await workflows.versions(id)).map(presentVersion) });
      } catch (e) {
        await storage.removeWorkflow(id);
        throw e;
      }
    },
  );

  app.get(
    '/api/workflows/:id',
    {
      config: access(USER_READ),
      schema: {
        tags: ['workflows'],
        summary: 'Get a workflow with its versions',
        operationId: 'getWorkflow',
        params: IdParams,
        response: { 200: WorkflowDetails, ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      const wf = await loadWorkflow(req, req.params.id, 'read');
      return { ...presentWorkflow(wf), versions: (await workflows.versions(wf.id)).map(presentVersion) };
    },
  );

  app.delete(
    '/api/workflows/:id',
    {
      config: access(USER_WRITE),
      schema: {
        tags: ['workflows'],
        summary: 'Delete a workflow',
        description: 'Deletes all versions and the runs of the workflow. Needs the editor role.',
        operationId: 'deleteWorkflow',
        params: IdParams,
        response: { 204: NoContent, ...errors(...PROTECTED, 404) },
      },
    },
    async (req, reply) => {
      const wf = await loadWorkflow(req, req.params.id, 'write');
      await workflows.delete(wf.id);
      await storage.removeWorkflow(wf.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/workflows/:id/versions',
    {
      config: access(USER_READ),
      schema: {
        tags: ['workflows'],
        summary: 'List the versions of a workflow',
        operationId: 'listWorkflowVersions',
        params: IdParams,
        response: { 200: items(WorkflowVersion), ...errors(...PROTECTED, 404) },
      },
    },
    async (req) => {
      const wf = await loadWorkflow(req, req.params.id, 'read');
      return { items: (await workflows.versions(wf.id)).map(presentVersion) };
    },
  );

  app.post(
    '/api/workflows/:id/versions',
    {
      config: { ...access(USER_WRITE), ...VERSION_DOC },
      schema: {
        tags: ['workflows'],
        summary: 'Upload a new version',
        description: 'Multipart upload of a workflow archive (`.knwf`) as the next version. Needs the editor role.',
        operationId: 'uploadWorkflowVersion',
        params: IdParams,
        response: { 201: WorkflowVersion, ...errors(...PROTECTED, 404, 413, 415) },
      },
    },
    async (req, reply) => {
      const wf = await loadWorkflow(req, req.params.id, 'write');
      const principal = principalOf(req);
      const file = (await readUpload(req, ctx, wf.id, [])).file!;
      // Concurrent uploads race for the next number; the loser retries with the one after.
      for (let attempt = 0; attempt < 20; attempt++) {
        const current = await workflows.findById(wf.id);
        if (!current) {
          await storage.remove(file.storageKey);
          throw new NotFoundError('no such workflow');
        }
        const now = ctx.now().toISOString();
        const row: WorkflowVersionRow = {
          workflow_id: wf.id,
          version: current.latest_version + 1,
          file_name: file.fileName,
          size: file.size,
          sha256: file.sha256,
          storage_key: file.storageKey,
          created_by: principal.type === 'user' ? principal.user.id : null,
          created_at: now,
        };
        if (await workflows.addVersion(row, now)) return reply.code(201).send(presentVersion(row));
      }
      await storage.remove(file.storageKey);
      throw new Error('could not allocate a version number');
    },
  );

  app.get(
    '/api/workflows/:id/versions/:version/download',
    {
      config: access(RUN_READ),
      schema: {
        tags: ['workflows'],
        summary: 'Download a workflow version',
        description: 'The archive as stored. Executors use it with the admin key.',
        operationId: 'downloadWorkflowVersion',
        params: Type.Object({ id: Id, version: Type.String({ pattern: '^[1-9][0-9]{0,8}$' }) }),
        response: {
          200: { description: 'The workflow archive', content: { 'application/zip': { schema: Type.String({ format: 'binary' }) } } },
          ...errors(...PROTECTED, 404),
        },
      },
    },
    async (req, reply) => {
      const wf = await loadWorkflow(req, req.params.id, 'read');
      const v = await workflows.version(wf.id, Number(req.params.version));
      if (!v || !(await storage.exists(v.storage_key))) throw new NotFoundError('no such workflow version');
      const safeName = v.file_name.replace(/[^A-Za-z0-9._-]/g, '_');
      return reply
        .header('content-type', 'application/zip')
        .header('content-length', String(v.size))
        .header('content-disposition', `attachment; filename="${safeName}"`)
        .header('x-content-sha256', v.sha256)
        .send(storage.open(v.storage_key) as unknown as string);
    },
  );
}
