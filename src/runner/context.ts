import type { Config } from '../infra/config.js';
import type { Authenticator } from './auth/authenticate.js';
import type { AccountService } from './auth/service.js';
import type { ExecutorsService } from './executors/service.js';
import type { OAuthService } from './oauth/service.js';
import type { InvitationsService } from './projects/invitations.js';
import type { ProjectsService } from './projects/service.js';
import type { RunsService } from './runs/service.js';
import type { SchedulesService } from './schedules/service.js';
import type { ProfileService } from './users/profile.js';
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
  /** The signed-in user's own name and address (address changes need proof). */
  profile: ProfileService;
  projects: ProjectsService;
  /** Adding people to projects by address, and the account's side of it. */
  invitations: InvitationsService;
  workflows: WorkflowsService;
  runs: RunsService;
  schedules: SchedulesService;
  executors: ExecutorsService;
  oauth: OAuthService;
}
