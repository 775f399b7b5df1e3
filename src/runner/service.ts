import type { Config } from '../infra/config.js';
import { createHttpApp, type HttpApp } from '../infra/http.js';

export interface RunnerService {
  app: HttpApp;
  close(): Promise<void>;
}

/** Placeholder until the runner issue lands: the part starts and answers /healthz. */
export async function createRunnerService(config: Config): Promise<RunnerService> {
  const app = createHttpApp({ logLevel: config.logLevel });
  return { app, close: () => app.close() };
}
