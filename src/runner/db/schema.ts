import type { ColumnType } from 'kysely';
/**
 * Row types of the runner database. Timestamps are ISO-8601 UTC text (`toISOString()`, fixed
 * width so they sort as text on both dialects); flags are integers 0/1; JSON is text.
 */
export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  role: 'admin' | 'member';
  /** Bumped on password change; JWTs carry it so older sessions stop working. */
  session_epoch: number;
  /** When an administrator disabled the account (null: enabled); no credential of it works meanwhile. */
  disabled_at: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: string;
  updated_at: string;
}

export interface MetaTable {
  key: string;
  value: string;
}

export interface CountersTable {
  name: 'credentials';
  value: number;
}

export interface PersonalTokensTable {
  id: string;
  user_id: string;
  name: string;
  scope: 'read' | 'write';
  token_hash: string;
  /** Last characters of the token, for display. */
  token_hint: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  last_used_ip: string | null;
}

export interface OAuthAccessTokensTable {
  id: string;
  user_id: string;
  client_id: string;
  scope: 'read' | 'write';
  token_hash: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  /** The OAuth grant that issued it (null only for rows made before grants existed). */
  grant_id: string | null;
}

/** One consent of a user to a client; revoking it ends every code and token issued under it. */
export interface OAuthGrantsTable {
  id: string;
  user_id: string;
  client_id: string;
  scope: 'read' | 'write';
  created_at: string;
  /** Last token issued (code exchange, refresh) or API call with one (written at most every 30 s). */
  last_used_at: string;
  revoked_at: string | null;
}

/** Authorization codes, stored as SHA-256; single use (`used_at`). */
export interface OAuthCodesTable {
  code_hash: string;
  grant_id: string;
  client_id: string;
  redirect_uri: string;
  /** 1 when the authorization request named redirect_uri: then the token request must too (RFC 6749 §4.1.3). */
  redirect_uri_given: number;
  code_challenge: string;
  scope: 'read' | 'write';
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Refresh tokens, stored as SHA-256; `rotated_at` is set when used (rotation). */
export interface OAuthRefreshTokensTable {
  id: string;
  grant_id: string;
  token_hash: string;
  scope: 'read' | 'write';
  created_at: string;
  expires_at: string;
  rotated_at: string | null;
  /** The refresh token whose use issued this one; siblings share it (see grants-repository `rotate`). */
  parent_id: string | null;
}

export type ClientAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

/** An OAuth client registered through RFC 7591. */
export interface OAuthClientsTable {
  id: string;
  /** SHA-256 of the client secret; null for public clients (`none`). */
  secret_hash: string | null;
  /** `client_name` as the client sent it: unverified, shown as such. */
  name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  token_endpoint_auth_method: ClientAuthMethod;
  /** JSON array of grant types. */
  grant_types: string;
  /** Space-separated scopes the client may ask for. */
  scope: string;
  client_uri: string | null;
  created_at: string;
}

export interface ProjectsTable {
  id: string;
  name: string;
  description: string;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface ProjectMembersTable {
  project_id: string;
  user_id: string;
  role: 'owner' | 'editor' | 'viewer';
  created_at: string;
}

/**
 * An owner's invitation to a project, for whoever holds the address: only its SHA-256 (of the
 * normalized address) and a masked hint for the owners' list are kept, not the address.
 */
export interface ProjectInvitationsTable {
  id: string;
  project_id: string;
  email_hash: string;
  email_hint: string;
  role: 'owner' | 'editor' | 'viewer';
  invited_by: string | null;
  created_at: string;
  expires_at: string;
}

/** A user's new address, taking effect once the link sent to it is opened (token as SHA-256). */
export interface EmailProofsTable {
  user_id: string;
  email: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
}

export interface WorkflowsTable {
  id: string;
  project_id: string;
  name: string;
  description: string;
  latest_version: number;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface WorkflowVersionsTable {
  workflow_id: string;
  version: number;
  file_name: string;
  size: number;
  sha256: string;
  storage_key: string;
  created_by: string | null;
  created_at: string;
  /** JSON: the parameters its configuration nodes declare (workflows/declared-parameters.ts). */
  declared_parameters: ColumnType<string, string | undefined, string>;
}

/**
 * `cancelling`: cancel was asked while an executor runs it; it still holds the executor's
 * capacity until the executor confirms the kill (its process may still be running), then it is
 * `cancelled`.
 */
export type RunStatus = 'queued' | 'running' | 'cancelling' | 'succeeded' | 'failed' | 'cancelled';

export interface RunsTable {
  id: string;
  project_id: string;
  workflow_id: string;
  workflow_version: number;
  status: RunStatus;
  parameters: string;
  created_by: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  attempt: number;
  executor_id: string | null;
  lease_hash: string | null;
  lease_expires_at: string | null;
  exit_code: number | null;
  error: string | null;
  /** JSON array of labels an executor must have to claim the run. */
  required_labels: string;
  /** The schedule that queued the run; null when started by hand. */
  schedule_id: string | null;
  /** Highest gap-free log sequence of the current attempt (sequences are per attempt). */
  log_ack: number;
  /**
   * Attempts that ended by a hand-back (the executor released the run, or was removed): counted
   * in `attempt` (log numbering stays unique per attempt) but not toward RUNNER_MAX_ATTEMPTS.
   */
  handbacks: ColumnType<number, number | undefined, number>;
}

/**
 * UTF-8 bytes of log text stored per attempt of a run, so RUNNER_MAX_LOG_BYTES is checked
 * without summing chunks; past the limit (the marker line stored) `bytes` exceeds it.
 */
export interface RunLogSizesTable {
  run_id: string;
  attempt: number;
  bytes: number;
}

export interface RunLogsTable {
  run_id: string;
  seq: number;
  attempt: number;
  text: string;
  created_at: string;
}

export interface RunOutputsTable {
  run_id: string;
  name: string;
  size: number;
  sha256: string | null;
  content_type: string | null;
  created_at: string;
}

export type ExecutorStatus = 'online' | 'draining' | 'offline';

export interface ExecutorsTable {
  id: string;
  name: string;
  labels: string;
  capacity: number;
  draining: number;
  created_at: string;
  last_heartbeat_at: string;
  last_ip: string | null;
}

export type OverlapPolicy = 'skip' | 'queue';

/** A cron schedule of a workflow (schedules/). */
export interface SchedulesTable {
  id: string;
  project_id: string;
  workflow_id: string;
  name: string;
  /** Cron expression as croner reads it (5 fields, or 6 with a fixed second). */
  cron: string;
  /** IANA time zone the expression is read in. */
  time_zone: string;
  enabled: number;
  /** JSON object: the parameters of every run it queues. */
  parameters: string;
  /** JSON array of labels its runs require. */
  required_labels: string;
  /** Pinned workflow version; null = the latest version at fire time. */
  workflow_version: number | null;
  overlap: OverlapPolicy;
  /** The next instant it fires; null while disabled (or when the expression has no future time). */
  next_fire_at: string | null;
  last_fire_at: string | null;
  last_outcome: 'queued' | 'skipped' | 'failed' | null;
  last_run_id: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}

export interface RunnerDB {
  users: UsersTable;
  runner_meta: MetaTable;
  runner_counters: CountersTable;
  personal_tokens: PersonalTokensTable;
  oauth_access_tokens: OAuthAccessTokensTable;
  oauth_clients: OAuthClientsTable;
  oauth_grants: OAuthGrantsTable;
  oauth_codes: OAuthCodesTable;
  oauth_refresh_tokens: OAuthRefreshTokensTable;
  projects: ProjectsTable;
  project_members: ProjectMembersTable;
  project_invitations: ProjectInvitationsTable;
  email_proofs: EmailProofsTable;
  workflows: WorkflowsTable;
  workflow_versions: WorkflowVersionsTable;
  runs: RunsTable;
  run_logs: RunLogsTable;
  run_log_sizes: RunLogSizesTable;
  run_outputs: RunOutputsTable;
  executors: ExecutorsTable;
  schedules: SchedulesTable;
}
