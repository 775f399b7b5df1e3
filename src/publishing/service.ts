import type { Config } from '../infra/config.js';
import { FailureLimiter } from '../infra/failure-limiter.js';
import { createHttpApp, type HttpApp } from '../infra/http.js';
import { openPublishingDatabase } from './db.js';
import { PATCH_BODY_LIMIT } from './products/fields.js';
import { productsRepository } from './products/repository.js';
import { registerProductRoutes } from './products/routes.js';
import { productService } from './products/service.js';

export interface PublishingService {
  app: HttpApp;
  close(): Promise<void>;
}

/** The publishing web + REST API part: opens and migrates its database, builds the app. */
export async function createPublishingService(config: Config): Promise<PublishingService> {
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const products = productService({ repo: productsRepository(database.db, database.dialect), publishing: config.publishing });
  const app = createHttpApp({ logLevel: config.logLevel, bodyLimit: PATCH_BODY_LIMIT });
  const limiter = new FailureLimiter({ maxFailures: 10, windowMs: 60_000, banMs: 60_000 });
  registerProductRoutes(app, { products, limiter });
  return {
    app,
    async close() {
      await app.close();
      await database.close();
    },
  };
}
