import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * PostgreSQL: the claim of runs/claims-repository.ts `claimRun` as one function, so it costs one round
 * trip instead of four (bench/runner-claim.ts). Same steps: the executor row is written first
 * (locking it: claims of one executor queue behind each other); each later statement of a
 * VOLATILE function takes a fresh snapshot under READ COMMITTED, so the count sees every claim of
 * this executor committed before; then the oldest queued run whose labels the executor has is
 * taken with FOR UPDATE SKIP LOCKED.
 */
const CLAIM_FUNCTION = `
CREATE OR REPLACE FUNCTION pier_claim_run(p_executor text, p_ip text, p_lease text, p_expires text, p_now text)
RETURNS TABLE (outcome text, claimed json) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  ex record;
  held bigint;
  taken runs;
BEGIN
  UPDATE executors SET last_heartbeat_at = p_now, last_ip = p_ip WHERE id = p_executor RETURNING labels, capacity, draining INTO ex;
  IF NOT FOUND THEN RETURN QUERY SELECT 'unknown-executor'::text, NULL::json; RETURN; END IF;
  IF ex.draining <> 0 THEN RETURN QUERY SELECT 'draining'::text, NULL::json; RETURN; END IF;
  SELECT COUNT(*) INTO held FROM runs WHERE executor_id = p_executor AND status IN ('running', 'cancelling');
  IF held >= ex.capacity THEN RETURN QUERY SELECT 'at-capacity'::text, NULL::json; RETURN; END IF;
  UPDATE runs SET status = 'running', executor_id = p_executor, lease_hash = p_lease, lease_expires_at = p_expires,
      attempt = attempt + 1, started_at = p_now, log_ack = 0
    WHERE id = (SELECT r.id FROM runs r WHERE r.status = 'queued' AND (r.required_labels = '[]' OR r.required_labels::jsonb <@ ex.labels::jsonb)
                ORDER BY r.created_at, r.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING * INTO taken;
  IF NOT FOUND THEN RETURN QUERY SELECT 'nothing-queued'::text, NULL::json; RETURN; END IF;
  RETURN QUERY SELECT 'claimed'::text, row_to_json(taken);
END
$fn$`;

/**
 * Forward-only migrations of the runner database. Portable subset only: text ids, text
 * ISO timestamps, integer flags, bigint sizes, so the same DDL runs on SQLite and PostgreSQL.
 */
export const runnerMigrations: Record<string, Migration> = {
  '0001_accounts': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('session_epoch', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('runner_meta')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('personal_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('token_hint', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('revoked_at', 'text')
        .addColumn('last_used_at', 'text')
        .addColumn('last_used_ip', 'text')
        .execute();
      await db.schema.createIndex('personal_tokens_user').on('personal_tokens').column('user_id').execute();
      await db.schema
        .createTable('oauth_access_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('oauth_access_tokens_user').on('oauth_access_tokens').column('user_id').execute();
    },
  },
  '0002_projects_workflows_runs': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('projects')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('project_members')
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('project_members_pk', ['project_id', 'user_id'])
        .execute();
      await db.schema.createIndex('project_members_user').on('project_members').column('user_id').execute();
      await db.schema
        .createTable('workflows')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('latest_version', 'integer', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('workflows_project').on('workflows').column('project_id').execute();
      await db.schema
        .createTable('workflow_versions')
        .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('file_name', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('storage_key', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('workflow_versions_pk', ['workflow_id', 'version'])
        .execute();
      await db.schema
        .createTable('executors')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('labels', 'text', (c) => c.notNull())
        .addColumn('capacity', 'integer', (c) => c.notNull())
        .addColumn('draining', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_heartbeat_at', 'text', (c) => c.notNull())
        .addColumn('last_ip', 'text')
        .execute();
      await db.schema
        .createTable('runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
        .addColumn('workflow_version', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('executor_id', 'text', (c) => c.references('executors.id').onDelete('set null'))
        .addColumn('lease_hash', 'text')
        .addColumn('lease_expires_at', 'text')
        .addColumn('exit_code', 'integer')
        .addColumn('error', 'text')
        .execute();
      await db.schema.createIndex('runs_list').on('runs').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('runs_queue').on('runs').columns(['status', 'created_at']).execute();
      await db.schema.createIndex('runs_workflow').on('runs').column('workflow_id').execute();
      await db.schema.createIndex('runs_project').on('runs').column('project_id').execute();
      await db.schema
        .createTable('run_logs')
        .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('run_logs_pk', ['run_id', 'seq'])
        .execute();
      await db.schema
        .createTable('run_outputs')
        .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('sha256', 'text')
        .addColumn('content_type', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('run_outputs_pk', ['run_id', 'name'])
        .execute();
    },
  },
  '0003_counters': {
    async up(db: Kysely<unknown>) {
      // Counters that instances compare to know whether something they remember is still
      // current. `credentials` grows in the same transaction as every credential change
      // (auth/credential-cache.ts), so no committed change can go unseen.
      await db.schema
        .createTable('runner_counters')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'bigint', (c) => c.notNull())
        .execute();
      await db.insertInto('runner_counters' as never).values({ name: 'credentials', value: 0 } as never).execute();
    },
  },
  '0004_oauth_clients': {
    async up(db: Kysely<unknown>) {
      // Clients registered through RFC 7591 dynamic registration. List-valued metadata is JSON
      // text; a confidential client's secret is stored only as its SHA-256.
      await db.schema
        .createTable('oauth_clients')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('secret_hash', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('redirect_uris', 'text', (c) => c.notNull())
        .addColumn('token_endpoint_auth_method', 'text', (c) => c.notNull())
        .addColumn('grant_types', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('client_uri', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0005_oauth_grants': {
    async up(db: Kysely<unknown>) {
      // One grant per consent (user × client); codes, refresh and access tokens hang off it so
      // that revoking the grant (connected apps, code replay, refresh reuse) ends them all.
      await db.schema
        .createTable('oauth_grants')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex('oauth_grants_user').on('oauth_grants').columns(['user_id', 'client_id']).execute();
      await db.schema
        .createTable('oauth_codes')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('redirect_uri_given', 'integer', (c) => c.notNull())
        .addColumn('code_challenge', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema
        .createTable('oauth_refresh_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('grant_id', 'text', (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('rotated_at', 'text')
        .execute();
      await db.schema.createIndex('oauth_refresh_tokens_grant').on('oauth_refresh_tokens').column('grant_id').execute();
      await db.schema.alterTable('oauth_access_tokens').addColumn('grant_id', 'text').execute();
      await db.schema.createIndex('oauth_access_tokens_grant').on('oauth_access_tokens').column('grant_id').execute();
    },
  },
  '0006_oauth_refresh_parent': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('oauth_refresh_tokens').addColumn('parent_id', 'text').execute();
      await db.schema.createIndex('oauth_refresh_tokens_parent').on('oauth_refresh_tokens').column('parent_id').execute();
    },
  },
  '0007_run_origin': {
    async up(db: Kysely<unknown>) {
      // Labels an executor must have to claim the run (JSON array), and the schedule that
      // started it (null for a run started by hand).
      await db.schema.alterTable('runs').addColumn('required_labels', 'text', (c) => c.notNull().defaultTo('[]')).execute();
      await db.schema.alterTable('runs').addColumn('schedule_id', 'text').execute();
      await db.schema.createIndex('runs_schedule').on('runs').columns(['schedule_id', 'status']).execute();
    },
  },
  '0008_executor_protocol': {
    async up(db: Kysely<unknown>) {
      // Log sequences are per attempt: a retried run starts again at 1, so the
      // acknowledged sequence (`runs.log_ack`, of the current attempt) can advance again.
      // Earlier rows continued across attempts; they are renumbered from 1 within each attempt.
      await db.schema
        .createTable('run_logs_v2')
        .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('run_logs_v2_pk', ['run_id', 'attempt', 'seq'])
        .execute();
      await sql`INSERT INTO run_logs_v2 (run_id, attempt, seq, text, created_at)
        SELECT run_id, attempt, ROW_NUMBER() OVER (PARTITION BY run_id, attempt ORDER BY seq), text, created_at FROM run_logs`.execute(db);
      await db.schema.dropTable('run_logs').execute();
      await db.schema.alterTable('run_logs_v2').renameTo('run_logs').execute();
      // The highest gap-free log sequence of the current attempt (what `ack` answers).
      await db.schema.alterTable('runs').addColumn('log_ack', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await sql`UPDATE runs SET log_ack = COALESCE((SELECT MAX(seq) FROM run_logs l WHERE l.run_id = runs.id AND l.attempt = runs.attempt), 0)`.execute(db);
      // Capacity is counted per executor on every claim.
      await db.schema.createIndex('runs_executor').on('runs').columns(['executor_id', 'status']).execute();
      // The sweeper looks for leases that ran out.
      await db.schema.createIndex('runs_lease').on('runs').columns(['status', 'lease_expires_at']).execute();
      if (db.getExecutor().adapter instanceof PostgresAdapter) await sql.raw(CLAIM_FUNCTION).execute(db);
    },
  },
  '0009_schedules': {
    async up(db: Kysely<unknown>) {
      // Cron schedules of a workflow. `next_fire_at` is the instant of the next fire (null while
      // disabled); instances take a fire by compare-and-set on it (schedules/repository.ts).
      await db.schema
        .createTable('schedules')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('workflow_id', 'text', (c) => c.notNull().references('workflows.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('cron', 'text', (c) => c.notNull())
        .addColumn('time_zone', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('required_labels', 'text', (c) => c.notNull())
        .addColumn('workflow_version', 'integer')
        .addColumn('overlap', 'text', (c) => c.notNull())
        .addColumn('next_fire_at', 'text')
        .addColumn('last_fire_at', 'text')
        .addColumn('last_outcome', 'text')
        .addColumn('last_run_id', 'text')
        .addColumn('created_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('schedules_workflow').on('schedules').column('workflow_id').execute();
      await db.schema.createIndex('schedules_due').on('schedules').column('next_fire_at').execute();
      // Retention walks finished runs by age (retention/repository.ts).
      await db.schema.createIndex('runs_finished').on('runs').column('finished_at').execute();
    },
  },
  '0010_run_handbacks': {
    async up(db: Kysely<unknown>) {
      // Hand-backs (release, executor removal) do not use up an attempt: counted
      // apart, the sweeper fails a run once `attempt - handbacks` reaches RUNNER_MAX_ATTEMPTS.
      await db.schema.alterTable('runs').addColumn('handbacks', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
  '0011_declared_parameters': {
    async up(db: Kysely<unknown>) {
      // The parameters a version's configuration nodes declare (workflows/declared-parameters.ts), as JSON.
      await db.schema.alterTable('workflow_versions').addColumn('declared_parameters', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    },
  },
  '0012_disabled_users': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('users').addColumn('disabled_at', 'text').execute();
    },
  },
  '0013_run_list_indexes': {
    async up(db: Kysely<unknown>) {
      // Every filter of the run list is an index range that ends in the list order (created_at,
      // id), so a page stops at its limit however many runs match (runs/list-query.ts). The
      // single-column indexes they extend are dropped: the new ones serve their lookups too.
      const lists: [string, string[]][] = [
        ['runs_project_list', ['project_id']],
        ['runs_project_status_list', ['project_id', 'status']],
        ['runs_workflow_list', ['workflow_id']],
        ['runs_workflow_status_list', ['workflow_id', 'status']],
        ['runs_schedule_list', ['schedule_id']],
        ['runs_creator_list', ['created_by']],
        ['runs_status_list', ['status']],
      ];
      for (const [name, columns] of lists) await db.schema.createIndex(name).on('runs').columns([...columns, 'created_at', 'id']).execute();
      for (const old of ['runs_project', 'runs_workflow', 'runs_queue']) await db.schema.dropIndex(old).execute();
    },
  },
  '0014_account_addresses': {
    async up(db: Kysely<unknown>) {
      // Invitations to a project, keyed by the SHA-256 of the invited address (projects/
      // invitations.ts): the account with that address sees them, whether it exists yet or not.
      await db.schema
        .createTable('project_invitations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('email_hash', 'text', (c) => c.notNull())
        .addColumn('email_hint', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('invited_by', 'text', (c) => c.references('users.id').onDelete('set null'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('project_invitations_address', ['project_id', 'email_hash'])
        .execute();
      await db.schema.createIndex('project_invitations_email').on('project_invitations').columns(['email_hash', 'expires_at']).execute();
      // A new address waiting for its proof (users/email-change.ts): the link's token as SHA-256.
      await db.schema
        .createTable('email_proofs')
        .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0015_run_log_sizes': {
    async up(db: Kysely<unknown>) {
      // What one attempt's log holds, so RUNNER_MAX_LOG_BYTES is checked without summing its chunks.
      await db.schema
        .createTable('run_log_sizes')
        .addColumn('run_id', 'text', (c) => c.notNull().references('runs.id').onDelete('cascade'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('run_log_sizes_pk', ['run_id', 'attempt'])
        .execute();
    },
  },
  '0016_schedule_list_indexes': {
    async up(db: Kysely<unknown>) {
      // The schedule list (GET /api/schedules) is paged in creation order (created_at, id): each
      // of its filters is an index range ending in that order, so a page reads its rows in order
      // and stops at its limit (schedules/list-query.ts). The workflow index it extends is dropped.
      const lists: [string, string[]][] = [
        ['schedules_list', []],
        ['schedules_project_list', ['project_id']],
        ['schedules_workflow_list', ['workflow_id']],
      ];
      for (const [name, columns] of lists) await db.schema.createIndex(name).on('schedules').columns([...columns, 'created_at', 'id']).execute();
      await db.schema.dropIndex('schedules_workflow').execute();
    },
  },
};
