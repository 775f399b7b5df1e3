import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { crc32 } from 'node:zlib';
import { type Config, loadConfig } from '../../src/infra/config.js';
import type { RunnerService } from '../../src/runner/service.js';
import { createRunnerService } from '../../src/runner/service.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { JWT_SECRET_KEY } from '../../src/runner/auth/jwt.js';
import type { RegistrationLimits } from '../../src/runner/oauth/service.js';
import { SettingsRepository } from '../../src/runner/settings/repository.js';

/** The JWT secret the runner generated and keeps in its database. */
export async function storedJwtSecret(r: { config: Config }): Promise<Uint8Array> {
  const database = await openRunnerDatabase(r.config.runner.databaseUrl);
  try {
    const value = await new SettingsRepository(database.db).get(JWT_SECRET_KEY);
    if (!value) throw new Error('no stored JWT secret');
    return new TextEncoder().encode(value);
  } finally {
    await database.close();
  }
}

export const API_KEY = 'test-admin-key-0123456789abcdef-0123';
/** The setup token of every test runner (RUNNER_SETUP_TOKEN): creating the first administrator needs it. */
export const SETUP_TOKEN = 'test-setup-token-0123456789abcdef-0123';

/** A clock tests can move. */
export class TestClock {
  t: number;
  constructor(start = Date.parse('2030-01-01T00:00:00.000Z')) {
    this.t = start;
  }
  now = (): Date => new Date(this.t);
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface TestRunner {
  service: RunnerService;
  config: Config;
  clock: TestClock;
  dataDir: string;
  close(): Promise<void>;
}

/** Starts a runner service (not listening; use app.inject) on `databaseUrl` or a fresh SQLite file. */
export async function startRunner(
  opts: {
    databaseUrl?: string;
    dataDir?: string;
    clock?: TestClock;
    apiKey?: string | null;
    env?: Record<string, string>;
    registrationLimits?: RegistrationLimits;
    /** false: the scheduler and retention loops do not run on their own (call tick/prune). */
    backgroundLoops?: boolean;
    claimRecheckMs?: number;
  } = {},
): Promise<TestRunner> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'pier-runner-'));
  const env: Record<string, string> = {
    PIER_DATA_DIR: dataDir,
    PIER_LOG_LEVEL: 'silent',
    RUNNER_URL: 'http://runner.test',
    RUNNER_SETUP_TOKEN: SETUP_TOKEN,
    ...(opts.apiKey === null ? {} : { API_KEY: opts.apiKey ?? API_KEY }),
    ...(opts.databaseUrl ? { RUNNER_DATABASE_URL: opts.databaseUrl } : {}),
    ...opts.env,
  };
  const config = loadConfig(env);
  const clock = opts.clock ?? new TestClock();
  const service = await createRunnerService(config, {
    now: clock.now,
    registrationLimits: opts.registrationLimits,
    backgroundLoops: opts.backgroundLoops,
    claimRecheckMs: opts.claimRecheckMs,
  });
  await service.app.ready();
  return {
    service,
    config,
    clock,
    dataDir,
    async close() {
      await service.close();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A minimal valid zip archive holding one file (a stand-in for a .knwf workflow). */
export function makeZip(name = 'workflow/workflow.knime', content = '<workflow/>'): Buffer {
  const data = Buffer.from(content);
  const compressed = deflateRawSync(data);
  const nameBuf = Buffer.from(name);
  const crc = crc32(data) >>> 0;
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0, 6);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(compressed.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(nameBuf.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(compressed.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(nameBuf.length, 28);
  central.writeUInt32LE(0, 42);
  const cdOffset = local.length + nameBuf.length + compressed.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBuf.length, 12);
  end.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, nameBuf, compressed, central, nameBuf, end]);
}

/** A multipart/form-data body. */
export function multipart(
  parts: { name: string; value?: string; file?: Buffer; filename?: string }[],
): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----pier${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n`));
    if (p.file) {
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${p.name}"; filename="${p.filename ?? 'w.knwf'}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        ),
      );
      chunks.push(p.file);
    } else {
      chunks.push(Buffer.from(`Content-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value ?? ''}`));
    }
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const apiKey = (token: string) => ({ authorization: `ApiKey ${token}` });
