import cookie from '@fastify/cookie';
import { drained } from '../infra/drain.js';
import { readinessProbe } from '../infra/readiness.js';
import formbody from '@fastify/formbody';
import type { Config } from '../infra/config.js';
import { createHttpApp, type HttpApp } from '../infra/http.js';
import { registerAccountRoutes } from './api/account-routes.js';
import { DOCS_OAUTH_REDIRECT_PATH, registerOpenApi } from './api/openapi.js';
import { registerProjectRoutes } from './api/project-routes.js';
import { registerInvitationRoutes } from './api/invitation-routes.js';
import { registerRunRoutes } from './api/run-routes.js';
import { registerExecutorRoutes } from './api/executor-routes.js';
import { registerWorkflowRoutes } from './api/workflow-routes.js';
import { registerScheduleRoutes } from './api/schedule-routes.js';
import { registerMetaRoutes } from './api/meta-routes.js';
import { registerOAuthRoutes } from './api/oauth-routes.js';
import { registerConnectedAppRoutes } from './api/connected-app-routes.js';
import { registerWebRoutes } from './web/routes.js';
import { registerUiRoutes } from './web/ui-routes.js';
import { registerMcpRoutes } from './mcp/routes.js';
import { OAUTH_PATHS, resourceMetadataUrl } from './oauth/metadata.js';
import { OAuthClientsRepository } from './oauth/repository.js';
import { OAuthGrantsRepository } from './oauth/grants-repository.js';
import { DOCS_CLIENT_ID, OAuthService, type RegistrationLimits } from './oauth/service.js';
import { Authenticator, callerOf } from './auth/authenticate.js';
import { paceCallers } from '../infra/pace-hooks.js';
import { CredentialEpoch } from './auth/credential-cache.js';
import { JwtSessions, loadJwtSecret } from './auth/jwt.js';
import { LoginLimiter } from './auth/login-limiter.js';
import { CredentialGuard, type CredentialGuardLimits } from './auth/guard.js';
import { OAuthTokensRepository, PersonalTokensRepository } from './auth/repository.js';
import type { RunnerContext } from './context.js';
import { openRunnerDatabase } from './db/index.js';
import { ExecutorsRepository } from './executors/repository.js';
import { ProjectsRepository } from './projects/repository.js';
import { RunsRepository } from './runs/repository.js';
import { UsersRepository } from './users/repository.js';
import { WorkflowsRepository } from './workflows/repository.js';
import { LocalWorkflowStorage } from './workflows/storage.js';
import { isolatedDeclaredReader } from './workflows/isolated-declared.js';
import { AccountService } from './auth/service.js';
import { ExecutorsService } from './executors/service.js';
import { ProjectsService } from './projects/service.js';
import { InvitationsService } from './projects/invitations.js';
import { InvitationsRepository } from './projects/invitations-repository.js';
import { EmailProofsRepository } from './users/email-proofs-repository.js';
import { type EmailSender, ProfileService } from './users/profile.js';
import { RunsService } from './runs/service.js';
import { WorkflowsService } from './workflows/service.js';
import { SettingsRepository } from './settings/repository.js';
import { BackgroundLoop } from '../infra/background-loop.js';
import { RetentionRepository } from './retention/repository.js';
import { RETENTION_INTERVAL_MS, RunRetention } from './retention/service.js';
import { SchedulesRepository } from './schedules/repository.js';
import { SCHEDULER_INTERVAL_MS, Scheduler } from './schedules/scheduler.js';
import { SchedulesService } from './schedules/service.js';
import { sql } from 'kysely';
import { type Listener, listen } from '../infra/database/notifications.js';
import { ExecutorSweeper } from './executors/sweeper.js';
import { LocalRunOutputStorage, MAX_OUTPUT_NAME_BYTES } from './runs/output-storage.js';
import { QueueSignal } from './runs/queue-signal.js';
import { MAX_EXECUTOR_LABELS, watchRunnerDatabase } from './metrics.js';

export interface RunnerService {
  app: HttpApp;
  /** Fires due schedules; the background loop calls `tick(now)` every second (tests call it directly). */
  scheduler: Scheduler;
  /** Prunes finished runs past RUNNER_RETENTION_DAYS; the background loop calls `prune(now)`. */
  retention: RunRetention;
  /** The lost-executor sweeper (tests call `sweep()` with a moved clock). */
  sweeper: ExecutorSweeper;
  /** Wakes waiting claims (benchmarks read `waiting`). */
  queue: QueueSignal;
  /** While no user exists: the one-time web page that creates the first administrator. */
  setupLink: string | null;
  /**
   * Stops the background loops (waiting for a pass in progress), the HTTP app (requests in
   * flight get `drainMs` to end; held claims answer at once) and the database.
   */
  close(drainMs?: number): Promise<void>;
}

/** PostgreSQL channel on which instances tell each other that a run was queued. */
const QUEUE_CHANNEL = 'pier_runner_queue';
/** Advisory-lock key under which one instance at a time sweeps for lost executors. */
export const SWEEP_LOCK_KEY = 0x70696572_01;

export interface RunnerServiceOptions {
  /** Injectable clock (tests): JWT issue/verify, token expiry, timestamps, rate limits. */
  now?: () => Date;
  /** Rejected-credential limits per address (tests lower them). */
  guardLimits?: CredentialGuardLimits;
  /** Client registrations per address (tests lower them). */
  registrationLimits?: RegistrationLimits;
  /** false: no scheduler or retention loop runs on its own (tests drive them with an injected clock). */
  backgroundLoops?: boolean;
  /** false: the lost-executor sweeper does not run on its own (tests call `sweeper.sweep()`). */
  sweeper?: boolean;
  /** How long a waiting claim goes without looking at the queue when not notified (tests raise it). */
  claimRecheckMs?: number;
  /**
   * How the runner mails proof links of new addresses. The runner has no mail settings yet, so
   * this is null and only administrators change addresses; tests pass a sender that keeps them.
   */
  emailSender?: EmailSender | null;
  /** Monotonic milliseconds the pacing of callers reads (tests freeze it); default performance.now. */
  paceClock?: () => number;
  /** Tests only: the parse of an upload's settings in its worker counts itself in cell 1, then waits while cell 0 is 0. */
  declaredHold?: Int32Array;
}


/**
 * The workflow runner part of `pier serve`: opens its own database, migrates it and builds the
 * HTTP app. Load order: external plugins → OpenAPI → auth hook → routes. Not listening yet.
 */
export async function createRunnerService(config: Config, options: RunnerServiceOptions = {}): Promise<RunnerService> {
  const now = options.now ?? (() => new Date());
  const database = await openRunnerDatabase(config.runner.databaseUrl);
  let listener: Listener | null = null;
  try {
    const app = createHttpApp({
      appName: 'runner',
      notReady: readinessProbe(() => database.ping()),
      logLevel: config.logLevel,
      logRequests: config.requestLog !== false,
      trustProxy: config.trustProxy,
      // The longest path parameter is an output name (`/api/runs/{id}/outputs/{name}`): at most
      // MAX_OUTPUT_NAME_BYTES of UTF-8, so at most that many UTF-16 code units, as the router
      // counts. Every name an upload accepts is routed; a longer one gets 400, not 414.
      maxParamLength: MAX_OUTPUT_NAME_BYTES,
      // Swagger UI sets its own CSP with hashes for its static files (staticCSP); its page
      // loads images as data: URIs and inline styles.
      contentSecurityPolicy: { 'img-src': ["'self'", 'data:'], 'style-src': ["'self'", "'unsafe-inline'"] },
      publicUrl: config.runner.url,
      refuseNul: true,
    });
    const { db } = database;
    const credentialEpoch = new CredentialEpoch(database);
    const hot = { readNow: database.readNow };
    const users = new UsersRepository(db, hot);
    const pats = new PersonalTokensRepository(db, hot);
    const oauthTokens = new OAuthTokensRepository(db, hot);
    const secret = await loadJwtSecret(config.runner.jwtSecret, new SettingsRepository(db), config.dataDir);
    const jwt = new JwtSessions(secret, config.runner.url, now);
    const guard = new CredentialGuard(now, options.guardLimits);
    const auth = new Authenticator({ users, pats, oauthTokens, jwt, apiKey: config.runner.apiKey, now, credentialEpoch, guard,
      resourceMetadataUrl: resourceMetadataUrl(config.runner.url),
    });
    const storage = new LocalWorkflowStorage(config.runner.storageDir);
    const declared = isolatedDeclaredReader({ hold: options.declaredHold });
    const outputs = new LocalRunOutputStorage(config.runner.storageDir);
    const scope = { projects: new ProjectsRepository(db), workflows: new WorkflowsRepository(db), runs: new RunsRepository(db, database.dialect) };
    const schedules = new SchedulesRepository(db);
    const queue = new QueueSignal();
    if (database.dialect === 'postgres') {
      // Runs queued through another instance wake this instance's waiting claims (LISTEN/NOTIFY):
      // an idle executor connected here must not wait for its long-poll to time out.
      listener = await listen(config.runner.databaseUrl, QUEUE_CHANNEL, () => queue.wakeLocal());
      queue.setBroadcast(async () => {
        await sql`SELECT pg_notify(${QUEUE_CHANNEL}, '')`.execute(db);
      });
    }
    const leaseMs = config.runner.leaseSeconds * 1000;
    const executorsRepo = new ExecutorsRepository(db);
    const runs = new RunsService({ ...scope, now, queue, outputs, executors: executorsRepo });
    const ctx: RunnerContext = {
      config,
      now,
      auth,
      account: new AccountService({ users, pats, jwt, loginLimiter: new LoginLimiter(now), settings: new SettingsRepository(db), now }),
      users,
      profile: new ProfileService({ users, proofs: new EmailProofsRepository(db), sender: options.emailSender ?? null, runnerUrl: config.runner.url, now }),
      projects: new ProjectsService({ ...scope, users, storage, outputs, projectStorageBytes: config.runner.projectStorageBytes, now }),
      invitations: new InvitationsService({ ...scope, invitations: new InvitationsRepository(db), now }),
      workflows: new WorkflowsService({ ...scope, storage, outputs, declared, projectStorageBytes: config.runner.projectStorageBytes, now }),
      runs,
      schedules: new SchedulesService({ ...scope, schedules, now }),
      executors: new ExecutorsService({
        executors: executorsRepo,
        runs: scope.runs,
        outputs,
        queue,
        now,
        settings: {
          leaseMs,
          maxAttempts: config.runner.maxAttempts,
          maxOutputBytes: config.runner.maxOutputBytes,
          maxLogBytes: config.runner.maxLogBytes,
          // With LISTEN/NOTIFY a re-check is only a safety net; without it (SQLite) it is how a
          // run queued by another process on the same file is seen.
          recheckMs: options.claimRecheckMs ?? (database.dialect === 'postgres' ? 5000 : 1000),
        },
      }),
      oauth: new OAuthService({
        clients: new OAuthClientsRepository(db),
        grants: new OAuthGrantsRepository(db),
        now,
        issuer: config.runner.url,
        accessTokenTtlSeconds: config.runner.oauthAccessTokenTtl,
        registrationLimits: options.registrationLimits,
      }),
    };

    const runnerUrl = config.runner.url;
    await ctx.oauth.ensureDocsClient(runnerUrl + DOCS_OAUTH_REDIRECT_PATH);
    await registerOpenApi(app, runnerUrl, {
      authorizationUrl: runnerUrl + OAUTH_PATHS.authorize,
      tokenUrl: runnerUrl + OAUTH_PATHS.token,
      docsClientId: DOCS_CLIENT_ID,
    });
    app.decorateRequest('principal', null);
    // Callback style: most requests authenticate without waiting, and then no promise is made.
    app.addHook('onRequest', (req, _reply, done) => {
      let waiting: void | Promise<void>;
      try {
        waiting = auth.enforce(req);
      } catch (e) {
        done(e as Error);
        return;
      }
      if (waiting) waiting.then(() => done(), done);
      else done();
    });
    // One caller's flood (a client looping over lists, uploads) is served at its pace and takes
    // turns with everyone else's requests (pacing.ts).
    paceCallers(app, config.runner.pace, { of: callerOf, unpaced: (req) => req.principal?.type === 'api-key' }, options.paceClock);
    await app.register(
      async (api) => {
        const a = api as unknown as HttpApp;
        registerMetaRoutes(a, ctx);
        registerAccountRoutes(a, ctx);
        registerProjectRoutes(a, ctx);
        registerInvitationRoutes(a, ctx);
        await registerWorkflowRoutes(a, ctx);
        registerRunRoutes(a, ctx);
        registerScheduleRoutes(a, ctx);
        registerExecutorRoutes(a, ctx);
        registerConnectedAppRoutes(a, ctx);
      },
    );
    // Its own context: OAuth endpoints answer errors in the RFC 6749 §5.2 shape.
    await app.register(async (oauth) => {
      // Forms and cookies only here: the API itself stays JSON with header credentials.
      await oauth.register(formbody, { bodyLimit: 16 * 1024 });
      await oauth.register(cookie);
      registerOAuthRoutes(oauth as unknown as HttpApp, ctx);
      registerWebRoutes(oauth as unknown as HttpApp, ctx);
    });
    await registerMcpRoutes(app, ctx);
    await registerUiRoutes(app, app.log);
    const scheduler = new Scheduler({ schedules, workflows: scope.workflows, runs, log: app.log });
    const retention = new RunRetention({
      repository: new RetentionRepository(db),
      outputs,
      days: config.runner.retentionDays,
    });
    const loops: BackgroundLoop[] = [];
    if (options.backgroundLoops !== false) {
      loops.push(
        new BackgroundLoop({
          intervalMs: SCHEDULER_INTERVAL_MS,
          run: async () => void (await scheduler.tick(now())),
          onError: (err) => app.log.error({ err }, 'scheduler tick failed'),
        }),
      );
      if (retention.enabled) {
        loops.push(
          new BackgroundLoop({
            intervalMs: RETENTION_INTERVAL_MS,
            firstDelayMs: 30_000,
            run: async (signal) => {
              const deleted = await retention.prune(now(), signal);
              if (deleted > 0) app.log.info({ deleted, retentionDays: config.runner.retentionDays }, 'retention: deleted finished runs');
            },
            onError: (err) => app.log.error({ err }, 'retention pass failed'),
          }),
        );
      }
      for (const loop of loops) loop.start();
    }
    const sweeper = new ExecutorSweeper({
      runs: scope.runs,
      outputs,
      queue,
      now,
      maxAttempts: config.runner.maxAttempts,
      intervalMs: config.runner.sweepSeconds * 1000,
      exclusive: (work) => scope.runs.exclusively(SWEEP_LOCK_KEY, work),
      onError: (e) => app.log.error({ err: e }, 'executor sweep failed'),
      onSweep: (r) => app.log.info({ requeued: r.requeued, failed: r.failed, cancelled: r.cancelled }, 'lost executors: runs swept'),
    });
    if (options.sweeper !== false) sweeper.start();
    const setupToken = await ctx.account.openSetup(config.runner.setupToken);
    // Metrics (when on) read the queue and the executors from the database at each scrape.
    const unwatch = watchRunnerDatabase({
      queueDepth: async () => scope.runs.queueDepth(await executorsRepo.labels(MAX_EXECUTOR_LABELS)),
      executors: () => executorsRepo.statusCounts(new Date(now().getTime() - leaseMs).toISOString()),
      onError: (err) => app.log.warn({ err }, 'metrics: reading the run queue or the executors failed'),
    });
    let closed = false;
    return {
      app,
      // A fragment, not a query: browsers send neither to the server nor in a Referer, so the
      // token stays out of access logs.
      setupLink: setupToken === null ? null : `${runnerUrl}/setup#token=${setupToken}`,
      scheduler,
      retention,
      sweeper,
      queue,
      async close(drainMs?: number) {
        if (closed) return;
        closed = true;
        // Held claims answer 204 now, so closing does not wait for their long-poll to run out.
        queue.close();
        unwatch();
        await Promise.all([
          ...loops.map((l) => l.stop()),
          sweeper.close(),
          // Requests in flight (uploads, live log streams) get `drainMs` to end.
          drained(() => app.close(), drainMs, () => app.server.closeAllConnections()),
        ]);
        await declared.close();
        await listener?.close();
        await database.close();
      },
    };
  } catch (e) {
    await listener?.close();
    await database.close();
    throw e;
  }
}
