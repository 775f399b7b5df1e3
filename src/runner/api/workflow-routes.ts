import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { RUN_READ, USER_READ, USER_WRITE } from '../auth/access.js';
import { access, principalOf } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { MAX_WORKFLOW_BYTES } from '../workflows/upload.js';
import { checkFields, registerMultipart, withMultipart } from './multipart.js';
import { multipartConfig } from './openapi.js';
import { presentVersion, presentWorkflow, presentWorkflowDetails, Workflow, WorkflowDetails, WorkflowVersion } from './presenters.js';
import { Description, errors, Id, IdParams, items, Name, NoContent, PROTECTED } from './schemas.js';

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

/**
 * What an upload takes of its caller's pace (infra/pace-hooks.ts): a file streamed, hashed and
 * renamed, rows written in a transaction and the archive read by a worker cost the serving loop
 * some ten times a small request, so a script uploading in a loop is served ten a second.
 */
const UPLOAD_TOKENS = 10;

const WORKFLOW_PARTS = 'the workflow archive as a "file" part';

/** The text of a new workflow: the rules of every JSON body's name and description. */
const WorkflowText = Type.Object({ name: Name, description: Description }, { additionalProperties: false });

/** Workflows and versions: each handler validates, calls one WorkflowsService method, presents. */
export async function registerWorkflowRoutes(app: HttpApp, ctx: RunnerContext): Promise<void> {
  const { workflows } = ctx;
  await registerMultipart(app);

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
    async (req) => ({ items: (await workflows.list(principalOf(req), req.params.id)).map(presentWorkflow) }),
  );

  app.post(
    '/api/projects/:id/workflows',
    {
      config: { ...access(USER_WRITE), ...UPLOAD_DOC, paceTokens: UPLOAD_TOKENS },
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
      const { workflow, versions } = await withMultipart(req, WORKFLOW_PARTS, (parts) =>
        workflows.create(principalOf(req), req.params.id, parts, (text) => checkFields(req, WorkflowText, text)),
      );
      return reply.code(201).send(presentWorkflowDetails(workflow, versions));
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
      const { workflow, versions } = await workflows.get(principalOf(req), req.params.id);
      return presentWorkflowDetails(workflow, versions);
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
      await workflows.delete(principalOf(req), req.params.id);
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
    async (req) => ({ items: (await workflows.versions(principalOf(req), req.params.id)).map(presentVersion) }),
  );

  app.post(
    '/api/workflows/:id/versions',
    {
      config: { ...access(USER_WRITE), ...VERSION_DOC, paceTokens: UPLOAD_TOKENS },
      schema: {
        tags: ['workflows'],
        summary: 'Upload a new version',
        description: 'Multipart upload of a workflow archive (`.knwf`) as the next version. Needs the editor role.',
        operationId: 'uploadWorkflowVersion',
        params: IdParams,
        response: { 201: WorkflowVersion, ...errors(...PROTECTED, 404, 413, 415) },
      },
    },
    async (req, reply) =>
      reply.code(201).send(presentVersion(await withMultipart(req, WORKFLOW_PARTS, (parts) => workflows.addVersion(principalOf(req), req.params.id, parts)))),
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
      const { version: v, stream } = await workflows.download(principalOf(req), req.params.id, Number(req.params.version));
      const safeName = v.file_name.replace(/[^A-Za-z0-9._-]/g, '_');
      return reply
        .header('content-type', 'application/zip')
        .header('content-length', String(v.size))
        .header('content-disposition', `attachment; filename="${safeName}"`)
        .header('x-content-sha256', v.sha256)
        .send(stream as unknown as string);
    },
  );
}
