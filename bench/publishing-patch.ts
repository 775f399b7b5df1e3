import pg from 'pg';
import { loadConfig } from '../src/infra/config.js';
import { openPublishingDatabase } from '../src/publishing/db.js';
import { productsRepository } from '../src/publishing/products/repository.js';
import { productService } from '../src/publishing/products/service.js';
import { benchPostgres } from './postgres.js';
import { CONNECTIONS, freePort, load, pierCli, pinToCpu, row, startPier, tempDir } from './lib.js';

const CHANGELOG = [
  '# Changelog',
  '',
  ...Array.from({ length: 30 }, (_, i) => `## [1.${30 - i}.0] - 2024-01-${String((i % 28) + 1).padStart(2, '0')}\n### Added\n- Node number ${i}\n### Fixed\n- Bug ${i}\n`),
].join('\n');

async function benchOne(label: string, databaseUrl: string | undefined): Promise<string[]> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { PIER_DATA_DIR: tempDir('pier-bench-'), PIER_HTTP_PORT: String(port) };
  if (databaseUrl) env.PIER_DATABASE_URL = databaseUrl;
  // One product per client, as when many vendors publish at once.
  const tokens = [JSON.parse(pierCli(env, 'staff', 'register', 'bench-0', '--name', 'Bench 0', '--json')).editToken as string];
  const config = loadConfig(env);
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  const products = productService({ repo: productsRepository(database.db, database.dialect), publishing: config.publishing });
  for (let i = 1; i < CONNECTIONS; i++) tokens.push((await products.register(`bench-${i}`, { name: `Bench ${i}` })).editToken);
  await database.close();
  const base = `http://127.0.0.1:${port}`;
  const server = await startPier(env, 'web', `${base}/healthz`);
  pinToCpu(server.pid!, 1);
  pinToCpu(process.pid, 0);
  try {
    const floor = await load({ url: `${base}/healthz` });
    const patch = (perClient?: (i: number) => { path: string; headers: Record<string, string> }) =>
      load({
        url: `${base}/api/products/bench-0`,
        method: 'PATCH',
        headers: { authorization: `Bearer ${tokens[0]}`, 'content-type': 'application/json' },
        bodies: [
          JSON.stringify({ description: 'Benchmark A', style: { color1: '#123456', color2: '#abcdef' } }),
          JSON.stringify({ description: 'Benchmark B', changelog: CHANGELOG }),
        ],
        ...(perClient ? { perClient } : {}),
      });
    const many = await patch((i) => ({ path: `/api/products/bench-${i}`, headers: { authorization: `Bearer ${tokens[i]}` } }));
    const one = await patch();
    return [
      row(`GET /healthz (${label})`, floor),
      row(`PATCH, 32 products (${label})`, many, floor),
      row(`PATCH, all on 1 product (${label})`, one, floor),
    ];
  } finally {
    server.kill();
    await new Promise((r) => server.once('exit', r));
  }
}

/** PATCH throughput and p99 at 32 clients on SQLite and PostgreSQL, against GET /healthz. */
export async function benchPublishingPatch(): Promise<string> {
  const lines = ['PATCH /api/products/:id vs GET /healthz (32 connections)', ...(await benchOne('sqlite', undefined))];
  const pgServer = await benchPostgres();
  if (!pgServer) {
    lines.push('PostgreSQL: not installed, skipped');
  } else {
    const db = `pier_bench_${Date.now()}`;
    const admin = new pg.Client({ connectionString: pgServer.url });
    admin.on('error', () => {});
    await admin.connect();
    await admin.query(`CREATE DATABASE ${db}`);
    const url = new URL(pgServer.url);
    url.pathname = `/${db}`;
    try {
      lines.push(...(await benchOne('postgres', url.toString())));
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      await admin.end();
      pgServer.stop();
    }
  }
  return lines.join('\n');
}
