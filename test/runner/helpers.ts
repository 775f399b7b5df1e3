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
import type { EmailSender } from '../../src/runner/users/profile.js';
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

/**
 * Settings for tests that send thousands of requests on purpose (fuzzers): pacing per caller
 * (RUNNER_CALLER_RATE) would only make them wait; caller-pacing.test.ts tests the pacing.
 */
export const UNPACED: Record<string, string> = { RUNNER_CALLER_RATE: '1000000', RUNNER_CALLER_BURST: '1000000' };

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
    /** How the runner mails (address proofs); none by default, as in production today. */
    emailSender?: EmailSender;
    /** The parse of an upload's settings counts itself in cell 1, then waits while cell 0 is 0. */
    declaredHold?: Int32Array;
    /** The clock the pacing of callers reads (monotonic ms); a frozen one makes waits exact. */
    paceClock?: () => number;
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
    emailSender: opts.emailSender,
    declaredHold: opts.declaredHold,
    paceClock: opts.paceClock,
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
  return makeZipOf([[name, content]]);
}

/** A valid zip archive of these files (deflated), in order. */
export function makeZipOf(files: [name: string, content: string | Buffer][]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of files) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
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
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBuf, compressed);
    centrals.push(central, nameBuf);
    offset += local.length + nameBuf.length + compressed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** A node's settings.xml as the platform writes it: the factory, and a model with these entries and configs. */
export function nodeSettings(factory: string, model: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<config xmlns="http://www.knime.org/2008/09/XMLConfig" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.knime.org/2008/09/XMLConfig http://www.knime.org/XMLConfig_2008_09.xsd" key="settings.xml">
<entry key="node_file" type="xstring" value="settings.xml"/>
<config key="flow_stack"/>
<config key="internal_node_subsettings">
<entry key="memory_policy" type="xstring" value="CacheSmallInMemory"/>
</config>
<config key="model">
${model}
</config>
<entry key="customDescription" type="xstring" isnull="true" value=""/>
<entry key="state" type="xstring" value="CONFIGURED"/>
<entry key="factory" type="xstring" value="${factory}"/>
<entry key="node-name" type="xstring" value="Configuration"/>
<entry key="node-bundle-name" type="xstring" value="KNIME JavaScript Base Views"/>
</config>
`;
}

/** A workflow archive whose configuration nodes declare rows (integer), ratio (number), dry (boolean), mode (a choice) and title (text). */
export function knwfWithConfigurationNodes(): Buffer {
  const nodes: [string, string][] = [
    [
      'org.knime.js.base.node.configuration.input.integer.IntegerDialogNodeFactory',
      '<entry key="parameterName" type="xstring" value="rows"/>\n<entry key="label" type="xstring" value="Rows to read"/>\n<entry key="description" type="xstring" value="How many rows the reader takes &lt;at most&gt;"/>\n<config key="defaultValue">\n<entry key="integer" type="xint" value="100"/>\n</config>',
    ],
    ['org.knime.js.base.node.configuration.input.dbl.DoubleDialogNodeFactory', '<entry key="parameterName" type="xstring" value="ratio"/>\n<config key="defaultValue">\n<entry key="double" type="xdouble" value="0.25"/>\n</config>'],
    ['org.knime.js.base.node.configuration.input.bool.BooleanDialogNodeFactory', '<entry key="parameterName" type="xstring" value="dry"/>\n<config key="defaultValue">\n<entry key="boolean" type="xboolean" value="true"/>\n</config>'],
    [
      'org.knime.js.base.node.configuration.selection.single.SingleSelectionDialogNodeFactory',
      '<entry key="parameterName" type="xstring" value="mode"/>\n<config key="defaultValue">\n<entry key="value" type="xstring" value="fast"/>\n</config>\n<config key="possibleChoices">\n<entry key="array-size" type="xint" value="2"/>\n<entry key="0" type="xstring" value="fast"/>\n<entry key="1" type="xstring" value="thorough"/>\n</config>',
    ],
    ['org.knime.js.base.node.configuration.input.string.StringDialogNodeFactory', '<entry key="parameterName" type="xstring" value="title"/>\n<config key="defaultValue">\n<entry key="string" type="xstring" value="Monthly &lt;b&gt;report&lt;/b&gt;"/>\n</config>'],
    ['org.knime.base.node.io.filehandling.csv.reader.CSVTableReaderNodeFactory', '<entry key="parameterName" type="xstring" value="not-a-configuration-node"/>'],
  ];
  return makeZipOf([
    ['Report/workflow.knime', '<config key="workflow.knime"/>'],
    ...nodes.map(([factory, model], i): [string, string] => [`Report/Node (#${i + 1})/settings.xml`, nodeSettings(factory, model)]),
  ]);
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
