import type { Config } from '../infra/config.js';
import type { Authenticator } from './auth/authenticate.js';
import type { JwtSessions } from './auth/jwt.js';
import type { LoginLimiter } from './auth/login-limiter.js';
import type { OAuthTokensRepository, PersonalTokensRepository } from './auth/repository.js';
import type { RunnerDatabase } from './db/index.js';
import type { ExecutorsRepository } from './executors/repository.js';
import type { ProjectsRepository } from './projects/repository.js';
import type { RunsRepository } from './runs/repository.js';
import type { UsersRepository } from './users/repository.js';
import type { WorkflowStorage } from './workflows/storage.js';
import type { WorkflowsRepository } from './workflows/repository.js';

/** Everything a route module needs; built once per service instance. */
export interface RunnerContext {
  config: Config;
  database: RunnerDatabase;
  now: () => Date;
  jwt: JwtSessions;
  auth: Authenticator;
  loginLimiter: LoginLimiter;
  users: UsersRepository;
  pats: PersonalTokensRepository;
  oauthTokens: OAuthTokensRepository;
  projects: ProjectsRepository;
  workflows: WorkflowsRepository;
  storage: WorkflowStorage;
  runs: RunsRepository;
  executors: ExecutorsRepository;
}
