import type { Config } from '../infra/config.js';
import { FailureLimiter, type FailureLimiterOptions } from '../infra/failure-limiter.js';
import { createHttpApp, type HttpApp } from '../infra/http.js';
import { openPublishingDatabase } from './db.js';
import { PATCH_BODY_LIMIT } from './products/fields.js';
import { productsRepository } from './products/repository.js';
import { registerProductRoutes } from './products/routes.js';
import { type ProductService, productService } from './products/service.js';

export interface PublishingService {
  app: HttpApp;
  products: ProductService;
  close(): Promise<void>;
}

export interface PublishingOptions {
  /** Bans of addresses that keep sending bad edit tokens (defaults: 10 failures a minute → 60 s). */
  failureLimits?: Partial<FailureLimiterOptions>;
}

/** The publishing web + REST API part: opens and migrates its database, builds the app. */
export async function createPublishingService(config: Config, options: PublishingOptions = {}): Promise<PublishingService> {
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const products = productService({ repo: productsRepository(database.db, database.dialect), publishing: config.publishing });
  const app = createHttpApp({ logLevel: config.logLevel, bodyLimit: PATCH_BODY_LIMIT, trustProxy: config.trustProxy });
  const limiter = new FailureLimiter({ maxFailures: 10, windowMs: 60_000, banMs: 60_000, ...options.failureLimits });
  registerProductRoutes(app, { products, limiter });
  return {
    app,
    products,
    async close() {
      await app.close();
      await database.close();
    },
  };
}
