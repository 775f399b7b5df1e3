import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import pg from 'pg';
import { randomId } from '../../src/infra/secrets.js';
import { IN_CI } from './tools.js';

export interface DialectTarget {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty database for one test; call `drop` when done. */
  create(): Promise<{ url: string; drop(): Promise<void> }>;
}

const sqliteTarget: DialectTarget = {
  name: 'sqlite',
  async create() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-db-'));
    return { url: path.join(dir, 'test.sqlite'), drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  },
};

/** A throwaway PostgreSQL database on the server of `adminUrl` (tests and benches). */
export async function createPostgresDatabase(adminUrl: string, prefix = 'pier_t_'): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}${randomId(6)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

function postgresTarget(adminUrl: string): DialectTarget {
  return { name: 'postgres', create: () => createPostgresDatabase(adminUrl) };
}

/** SQLite always; PostgreSQL when TEST_DATABASE_URL is set (required in CI). */
export function dialects(): DialectTarget[] {
  const pgUrl = process.env.TEST_DATABASE_URL;
  if (!pgUrl && IN_CI) throw new Error('TEST_DATABASE_URL must be set in CI so repository tests run on PostgreSQL');
  return pgUrl ? [sqliteTarget, postgresTarget(pgUrl)] : [sqliteTarget];
}

export function tempDir(prefix = 'pier-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}
