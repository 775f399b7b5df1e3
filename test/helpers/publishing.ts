import { loadConfig } from '../../src/infra/config.js';
import { createPublishingService, type PublishingOptions, type PublishingService } from '../../src/publishing/service.js';
import { tempDir } from './db.js';

export interface RunningPublishing {
  url: string;
  service: PublishingService;
  close(): Promise<void>;
}

/**
 * Starts the real publishing service on a free loopback port against `databaseUrl`. Pages read
 * the change counter on every request unless `pageFreshMs` is given (see web/helpers.ts startSite).
 */
export async function startPublishing(databaseUrl: string, options: PublishingOptions = {}, env: Record<string, string> = {}): Promise<RunningPublishing> {
  const config = loadConfig({
    PIER_DATA_DIR: tempDir('pier-data-'),
    PIER_DATABASE_URL: databaseUrl,
    PIER_HTTP_PORT: '0',
    PIER_LOG_LEVEL: 'silent',
    PIER_BASE_URL: 'http://pier.test',
    ...env,
  });
  const service = await createPublishingService(config, { pageFreshMs: 0, ...options });
  const url = await service.app.listen({ host: '127.0.0.1', port: 0 });
  return { url, service, close: () => service.close() };
}

export async function patchProduct(
  base: string,
  id: string,
  token: string | null,
  body: unknown,
  init: { contentType?: string; query?: string; raw?: string } = {},
): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': init.contentType ?? 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(`${base}/api/products/${id}${init.query ?? ''}`, {
    method: 'PATCH',
    headers,
    body: init.raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}
