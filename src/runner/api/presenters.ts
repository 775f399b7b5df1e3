import { Type } from 'typebox';
import type { PersonalTokenRow } from '../auth/repository.js';
import type { ConnectedAppRow } from '../oauth/grants-repository.js';
import type { ExecutorView } from '../executors/service.js';
import type { InvitationView } from '../projects/invitations-repository.js';
import type { MemberRow, ProjectRow, ProjectSummaryRow } from '../projects/repository.js';
import type { RunLogRow, RunOutputRow, RunRow } from '../runs/run-rows.js';
import type { ScheduleView } from '../schedules/service.js';
import type { UserRow } from '../users/repository.js';
import type { DeclaredParameter } from '../workflows/declared-parameters.js';
import type { StorageUsage, VersionListing, WorkflowRow } from '../workflows/repository.js';
import { Nullable, NullableTimestamp, StringEnum, Timestamp, User } from './schemas.js';

/*
 * What the API shows of each resource: the response schema and the one function that turns a row
 * into it. Every route presents through here; no route file imports another.
 */

export const TokenScopeSchema = StringEnum(['read', 'write']);
export const MemberRoleSchema = StringEnum(['owner', 'editor', 'viewer']);
export const RunStatusSchema = StringEnum(['queued', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled']);

// --- users and tokens ---------------------------------------------------------------------

export function presentUser(u: UserRow) {
  return { id: u.id, email: u.email, name: u.name, role: u.role, disabled: u.disabled_at !== null, createdAt: u.created_at, updatedAt: u.updated_at };
}

export const TokenInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: TokenScopeSchema,
  tokenHint: Type.String({ description: 'last characters of the token, for recognising it' }),
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
  lastUsedAt: NullableTimestamp,
  lastUsedIp: Nullable(Type.String()),
});

export function presentToken(t: PersonalTokenRow) {
  return {
    id: t.id,
    name: t.name,
    scope: t.scope,
    tokenHint: t.token_hint,
    createdAt: t.created_at,
    expiresAt: t.expires_at,
    lastUsedAt: t.last_used_at,
    lastUsedIp: t.last_used_ip,
  };
}

export const CreatedToken = Type.Object({
  id: Type.String(),
  token: Type.String({ description: 'the secret, shown only in this response' }),
  name: Type.String(),
  scope: TokenScopeSchema,
  createdAt: Timestamp,
  expiresAt: NullableTimestamp,
});

export function presentCreatedToken(row: PersonalTokenRow, token: string) {
  return { id: row.id, token, name: row.name, scope: row.scope, createdAt: row.created_at, expiresAt: row.expires_at };
}

export const Me = Type.Object({
  ...User.properties,
  authenticatedBy: StringEnum(['jwt', 'pat', 'oauth']),
  scope: Nullable(TokenScopeSchema, { description: 'scope of the token used, null for a web session' }),
});

/** What `GET /api/me` says to the admin API key, which is no user. */
export const ApiKeyIdentity = Type.Object({
  authenticatedBy: Type.Literal('api-key'),
  role: Type.Literal('api-key'),
  grants: Type.Array(Type.String(), { description: 'what the admin API key may do' }),
});

// --- projects -----------------------------------------------------------------------------

export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ProjectStorage = Type.Object(
  {
    usedBytes: Type.Integer({ description: 'bytes the stored versions of every workflow of the project take together' }),
    limitBytes: Type.Integer({ description: 'the quota of those bytes (RUNNER_PROJECT_STORAGE_BYTES); 0: no limit. Run outputs are not counted' }),
  },
  { description: "the project's storage of workflow archives: an upload that would pass the limit is refused with 409 project_storage_full" },
);

/** A project as read alone: with its storage. */
export const ProjectDetail = Type.Object({ ...Project.properties, storage: ProjectStorage });

export const ProjectSummary = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  role: Type.Unsafe<'owner' | 'editor' | 'viewer' | null>({
    type: ['string', 'null'],
    enum: ['owner', 'editor', 'viewer', null],
    description: "the caller's role in the project (null: an administrator who is not a member)",
  }),
  counts: Type.Object({ workflows: Type.Integer(), members: Type.Integer(), runs: Type.Integer() }),
});

export function presentProject(p: ProjectRow) {
  return { id: p.id, name: p.name, description: p.description, createdAt: p.created_at, updatedAt: p.updated_at };
}

export function presentProjectDetail(d: { project: ProjectRow; storage: StorageUsage }) {
  return { ...presentProject(d.project), storage: { usedBytes: d.storage.usedBytes, limitBytes: d.storage.limitBytes } };
}

export function presentProjectSummary(p: ProjectSummaryRow) {
  return { ...presentProject(p), role: p.role, counts: { workflows: p.workflow_count, members: p.member_count, runs: p.run_count } };
}

export const Member = Type.Object({
  userId: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: MemberRoleSchema,
  addedAt: Timestamp,
});

export function presentMember(m: MemberRow) {
  return { userId: m.user_id, email: m.email, name: m.name, role: m.role, addedAt: m.created_at };
}

export const Invitation = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  projectName: Type.String(),
  emailHint: Type.String({ description: 'the invited address, masked (`n…@example.com`): only its SHA-256 is stored' }),
  role: MemberRoleSchema,
  invitedBy: Type.Unsafe<{ name: string; email: string } | null>({
    type: ['object', 'null'],
    properties: { name: Type.String(), email: Type.String() },
    required: ['name', 'email'],
    description: 'the owner who invited (null once their account is deleted)',
  }),
  createdAt: Timestamp,
  expiresAt: Timestamp,
});

export function presentInvitation(i: InvitationView) {
  return {
    id: i.id,
    projectId: i.project_id,
    projectName: i.project_name,
    emailHint: i.email_hint,
    role: i.role,
    invitedBy: i.inviter_name === null || i.inviter_email === null ? null : { name: i.inviter_name, email: i.inviter_email },
    createdAt: i.created_at,
    expiresAt: i.expires_at,
  };
}

// --- workflows ----------------------------------------------------------------------------

export const Workflow = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  name: Type.String(),
  description: Type.String(),
  latestVersion: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const WorkflowVersion = Type.Object({
  workflowId: Type.String(),
  version: Type.Integer(),
  fileName: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  createdAt: Timestamp,
  createdBy: Nullable(Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }), { description: 'who uploaded it (null once their account is deleted)' }),
  declaredParameters: Type.Array(
    Type.Object({
      name: Type.String(),
      type: StringEnum(['string', 'integer', 'number', 'boolean']),
      default: Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'] }),
      label: Type.String(),
      description: Type.String(),
      choices: Type.Optional(Type.Array(Type.String())),
      minimum: Type.Optional(Type.Number({ description: "the smallest value the node's Java type holds (int, short, long within ±(2^53−1), float)" })),
      maximum: Type.Optional(Type.Number({ description: "the largest value the node's Java type holds" })),
    }),
    { description: "the run parameters the archive's configuration nodes declare (name, type, default, label, description, choices, and for numbers the range of their Java type); a run's values for them are checked against their type and range (decimal digits only: no 0x/0b/0o, Infinity or NaN), and one given no value (or null) runs with the default" },
  ),
});

export const WorkflowDetails = Type.Object({ ...Workflow.properties, versions: Type.Array(WorkflowVersion) });

export function presentWorkflow(w: WorkflowRow) {
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

export function presentVersion(v: VersionListing) {
  const createdBy = v.created_by !== null && v.author_email !== null ? { id: v.created_by, name: v.author_name ?? '', email: v.author_email } : null;
  return {
    workflowId: v.workflow_id,
    version: v.version,
    fileName: v.file_name,
    size: v.size,
    sha256: v.sha256,
    createdAt: v.created_at,
    createdBy,
    declaredParameters: JSON.parse(v.declared_parameters) as DeclaredParameter[],
  };
}

export function presentWorkflowDetails(w: WorkflowRow, versions: VersionListing[]) {
  return { ...presentWorkflow(w), versions: versions.map(presentVersion) };
}

// --- runs ---------------------------------------------------------------------------------

// A type array, not anyOf (see schemas.ts); maxLength applies to strings only.
export const ParameterValue = Type.Unsafe<string | number | boolean | null>({ type: ['string', 'number', 'boolean', 'null'], maxLength: 10_000 });
/** Run parameters as a request gives them (a run, a re-run, a schedule). */
export const RunParameters = Type.Unsafe<Record<string, string | number | boolean | null>>({
  type: 'object',
  // Names as declared parameters have them (1-200 characters, no control characters): a record
  // of TypeBox would check values only.
  propertyNames: { minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]*$' },
  additionalProperties: ParameterValue,
  maxProperties: 200,
});

export const Run = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  workflowId: Type.String(),
  workflowVersion: Type.Integer(),
  status: RunStatusSchema,
  parameters: Type.Record(Type.String(), ParameterValue),
  requiredLabels: Type.Array(Type.String(), { description: 'labels an executor must have to claim the run' }),
  scheduleId: Nullable(Type.String({ description: 'the schedule that queued the run; null when started by hand' })),
  createdBy: Nullable(Type.String({ description: 'the user who started the run (null: a schedule, or an account since deleted)' })),
  attempt: Type.Integer({ description: 'how many times an executor has taken the run' }),
  executorId: Nullable(Type.String()),
  executorName: Type.Optional(Nullable(Type.String({ description: "the executor's name, on GET /api/runs/{id} (null: none yet, or removed since)" }))),
  exitCode: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  createdAt: Timestamp,
  startedAt: NullableTimestamp,
  finishedAt: NullableTimestamp,
});

export function presentRun(r: RunRow) {
  return {
    id: r.id,
    projectId: r.project_id,
    workflowId: r.workflow_id,
    workflowVersion: r.workflow_version,
    status: r.status,
    parameters: JSON.parse(r.parameters) as Record<string, string | number | boolean | null>,
    requiredLabels: JSON.parse(r.required_labels) as string[],
    scheduleId: r.schedule_id,
    createdBy: r.created_by,
    attempt: r.attempt,
    executorId: r.executor_id,
    exitCode: r.exit_code,
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

export const LogChunk = Type.Object({ seq: Type.Integer(), attempt: Type.Integer(), text: Type.String(), createdAt: Timestamp });

export function presentLog(l: RunLogRow) {
  return { seq: l.seq, attempt: l.attempt, text: l.text, createdAt: l.created_at };
}

export const Output = Type.Object({
  name: Type.String(),
  size: Type.Integer(),
  sha256: Nullable(Type.String()),
  contentType: Nullable(Type.String()),
  createdAt: Timestamp,
});

export function presentOutput(o: RunOutputRow) {
  return { name: o.name, size: o.size, sha256: o.sha256, contentType: o.content_type, createdAt: o.created_at };
}

// --- schedules ----------------------------------------------------------------------------

export const Schedule = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  workflowId: Type.String(),
  name: Type.String(),
  cron: Type.String({ description: 'cron expression (croner syntax: 5 fields, or 6 with a fixed leading second, or @daily etc.)' }),
  timeZone: Type.String({ description: 'IANA time zone the expression is read in' }),
  enabled: Type.Boolean(),
  parameters: Type.Record(Type.String(), ParameterValue),
  requiredLabels: Type.Array(Type.String()),
  workflowVersion: Nullable(Type.Integer({ description: 'the pinned version; null = the latest version when it fires' })),
  overlap: StringEnum(['skip', 'queue'], { description: 'when its previous run is still queued or running: skip this fire, or queue another run' }),
  nextFireTimes: Type.Array(Timestamp, { description: 'the next five fire instants (UTC); empty while disabled' }),
  lastFireAt: NullableTimestamp,
  lastOutcome: Type.Unsafe<'queued' | 'skipped' | 'failed' | null>({
    type: ['string', 'null'],
    enum: ['queued', 'skipped', 'failed', null],
    description: 'what the last fire did: queued a run, skipped it (overlap), or failed to queue; null before the first fire',
  }),
  lastRunId: Nullable(Type.String({ description: 'the run the last fire queued' })),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export function presentSchedule({ row: s, nextFireTimes }: ScheduleView) {
  return {
    id: s.id,
    projectId: s.project_id,
    workflowId: s.workflow_id,
    name: s.name,
    cron: s.cron,
    timeZone: s.time_zone,
    enabled: s.enabled === 1,
    parameters: JSON.parse(s.parameters) as Record<string, string | number | boolean | null>,
    requiredLabels: JSON.parse(s.required_labels) as string[],
    workflowVersion: s.workflow_version,
    overlap: s.overlap,
    nextFireTimes,
    lastFireAt: s.last_fire_at,
    lastOutcome: s.last_outcome,
    lastRunId: s.last_run_id,
    createdAt: s.created_at,
    updatedAt: s.updated_at,
  };
}

/** A schedule in a list across projects (GET /api/schedules), with its workflow's name. */
export const ListedSchedule = Type.Object({ ...Schedule.properties, workflowName: Type.String() });

/** A schedule in a list across projects, with its workflow's name: one object a row, not a copy. */
export function presentListedSchedule(v: ScheduleView & { workflowName: string }) {
  const listed = presentSchedule(v) as ReturnType<typeof presentSchedule> & { workflowName: string };
  listed.workflowName = v.workflowName;
  return listed;
}

// --- executors ----------------------------------------------------------------------------

export const Executor = Type.Object({
  id: Type.String(),
  name: Type.String(),
  labels: Type.Array(Type.String()),
  capacity: Type.Integer(),
  status: StringEnum(['online', 'draining', 'offline']),
  runningRuns: Type.Integer(),
  createdAt: Timestamp,
  lastHeartbeatAt: Timestamp,
  lastIp: Nullable(Type.String()),
});

export function presentExecutor(v: ExecutorView) {
  const e = v.row;
  return {
    id: e.id,
    name: e.name,
    labels: JSON.parse(e.labels) as string[],
    capacity: e.capacity,
    status: v.status,
    runningRuns: v.runningRuns,
    createdAt: e.created_at,
    lastHeartbeatAt: e.last_heartbeat_at,
    lastIp: e.last_ip,
  };
}

// --- connected applications (OAuth) -------------------------------------------------------

export const ConnectedApp = Type.Object({
  id: Type.String({ description: 'the OAuth client_id' }),
  name: Type.String({ description: 'the name the application registered with: unverified' }),
  clientUri: Nullable(Type.String()),
  scope: TokenScopeSchema,
  firstAuthorizedAt: Timestamp,
  lastUsedAt: Timestamp,
});

export function presentConnectedApp(a: ConnectedAppRow) {
  return {
    id: a.client_id,
    name: a.client_name,
    clientUri: a.client_uri,
    scope: a.scope === 'write' ? ('write' as const) : ('read' as const),
    firstAuthorizedAt: a.first_authorized_at,
    lastUsedAt: a.last_used_at,
  };
}
