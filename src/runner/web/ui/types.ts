/** The shapes of the API's answers the UI reads (see /api/docs/json). */
export type Role = 'admin' | 'member';
export type MemberRole = 'owner' | 'editor' | 'viewer';
export type RunStatus = 'queued' | 'running' | 'cancelling' | 'succeeded' | 'failed' | 'cancelled';
export type ParameterValue = string | number | boolean | null;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Me {
  id: string;
  email: string;
  name: string;
  role: Role;
  createdAt: string;
  updatedAt: string;
}

export interface User extends Omit<Me, 'role'> {
  role: Role;
  disabled: boolean;
}

export interface Project {
  id: string;
  name: string;
  description: string;
  createdAt: string;
  updatedAt: string;
  /** In the project list only: the caller's role (null: an administrator who is not a member) and counts. */
  role?: MemberRole | null;
  counts?: { workflows: number; members: number; runs: number };
  /** Read alone only: bytes its workflow versions take, and the limit (0: none). */
  storage?: { usedBytes: number; limitBytes: number };
}

export interface Member {
  userId: string;
  email: string;
  name: string;
  role: MemberRole;
  addedAt: string;
}

/** A pending invitation to a project (the owners' list, or the account's own). */
export interface Invitation {
  id: string;
  projectId: string;
  projectName: string;
  /** The invited address, masked: only its hash is stored. */
  emailHint: string;
  role: MemberRole;
  invitedBy: { name: string; email: string } | null;
  createdAt: string;
  expiresAt: string;
}

export interface Workflow {
  id: string;
  projectId: string;
  name: string;
  description: string;
  latestVersion: number;
  createdAt: string;
  updatedAt: string;
}

export interface WorkflowVersion {
  workflowId: string;
  version: number;
  fileName: string;
  size: number;
  sha256: string;
  createdAt: string;
  createdBy: { id: string; name: string; email: string } | null;
  declaredParameters: DeclaredParameter[];
}

/** A run parameter a version's configuration node declares. */
export interface DeclaredParameter {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean';
  default: ParameterValue;
  label: string;
  description: string;
  choices?: string[];
  /** The range of the node's Java type (int, short, long, float); absent for a double and for older versions. */
  minimum?: number;
  maximum?: number;
}

export interface WorkflowDetails extends Workflow {
  versions: WorkflowVersion[];
}

export interface Run {
  id: string;
  projectId: string;
  workflowId: string;
  workflowVersion: number;
  status: RunStatus;
  parameters: Record<string, ParameterValue>;
  requiredLabels: string[];
  scheduleId: string | null;
  /** The user who started it (null: a schedule, or a deleted account). */
  createdBy: string | null;
  attempt: number;
  /** The executor's name (GET /api/runs/{id} only; null: none yet, or removed since). */
  executorName?: string | null;
  executorId: string | null;
  exitCode: number | null;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface LogChunk {
  seq: number;
  attempt: number;
  text: string;
  createdAt: string;
}

export interface Output {
  name: string;
  size: number;
  sha256: string | null;
  contentType: string | null;
  createdAt: string;
}

export interface Schedule {
  id: string;
  projectId: string;
  workflowId: string;
  name: string;
  cron: string;
  timeZone: string;
  enabled: boolean;
  parameters: Record<string, ParameterValue>;
  requiredLabels: string[];
  workflowVersion: number | null;
  overlap: 'skip' | 'queue';
  nextFireTimes: string[];
  lastFireAt: string | null;
  lastOutcome: 'queued' | 'skipped' | 'failed' | null;
  lastRunId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ListedSchedule extends Schedule {
  workflowName: string;
}

export interface SchedulePreview {
  cron: string;
  timeZone: string;
  description: string;
  nextFireTimes: string[];
}

export interface Executor {
  id: string;
  name: string;
  labels: string[];
  capacity: number;
  runningRuns: number;
  createdAt: string;
  lastHeartbeatAt: string;
  lastIp: string | null;
  status: 'online' | 'draining' | 'offline';
}

export interface TokenInfo {
  id: string;
  name: string;
  scope: 'read' | 'write';
  tokenHint: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  lastUsedIp: string | null;
}

export interface CreatedToken {
  id: string;
  token: string;
  name: string;
  scope: 'read' | 'write';
  createdAt: string;
  expiresAt: string | null;
}

export interface ConnectedApp {
  id: string;
  name: string;
  clientUri: string | null;
  scope: 'read' | 'write';
  firstAuthorizedAt: string;
  lastUsedAt: string;
}

export interface SessionAnswer {
  token: string;
  expiresAt: string;
}
