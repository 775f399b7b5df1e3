import type { Config } from '../infra/config.js';
import type { Authenticator } from './auth/authenticate.js';
import type { AccountService } from './auth/service.js';
import type { ExecutorsService } from './executors/service.js';
import type { OAuthService } from './oauth/service.js';
import type { ProjectsService } from './projects/service.js';
import type { RunsService } from './runs/service.js';
import type { SchedulesService } from './schedules/service.js';
import type { UsersRepository } from './users/repository.js';
import type { WorkflowsService } from './workflows/service.js';

/** What the route modules get: the authenticator and one service per resource; built once. */
export interface RunnerContext {
  config: Config;
  now: () => Date;
  auth: Authenticator;
  account: AccountService;
  /** For the user-administration functions of users/service.ts. */
  users: UsersRepository;
  projects: ProjectsService;
  workflows: WorkflowsService;
  runs: RunsService;
  schedules: SchedulesService;
  executors: ExecutorsService;
  oauth: OAuthService;
}
