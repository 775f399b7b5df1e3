import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, count, days, type Env, mebibytes, port, seconds, size, sizeOrOff } from './config-values.js';
import { parsePlatformCategories, type PlatformCategory } from './platform-categories.js';

export { KNIME_CATEGORIES, type PlatformCategory } from './platform-categories.js';
export { ConfigError, parseSize } from './config-values.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Which proxies' `X-Forwarded-For` to believe (PIER_TRUST_PROXY): none (the default: the
 * socket's address is the client), the last N hops, or proxies at these addresses / CIDR blocks.
 */
export type TrustProxy = false | number | string[];

export interface Config {
  host: string;
  trustProxy: TrustProxy;
  dataDir: string;
  logLevel: LogLevel;
  /**
   * Prometheus metrics (infra/metrics/): `GET /metrics` on a listener of its own at host:port
   * (PIER_METRICS_PORT, unset or 0 = off, the default; PIER_METRICS_HOST, default 127.0.0.1:
   * loopback even when PIER_HOST opens the service to a network, as the page names internals).
   */
  metrics: { port: number; host: string };
  /**
   * How long a SIGTERM waits for requests, downloads and SFTP transfers in flight before it cuts
   * them (PIER_DRAIN_SECONDS, default 30; 0 stops at once).
   */
  drainSeconds: number;
  /**
   * How long a SIGTERM keeps the listeners open, answering `/readyz` 503 and everything else as
   * usual, before they close and the drain above begins (PIER_DRAIN_DELAY_SECONDS, default 5;
   * 0 closes at once): a load balancer that probes readiness sees the 503 and stops sending.
   */
  drainDelaySeconds: number;
  /** One info line per answered request: method, route, status, time, request id (PIER_REQUEST_LOG, on by default). */
  requestLog: boolean;
  publishing: {
    /**
     * Pacing of each caller of the web part's routes (an address; pages answered from memory
     * are not paced): PIER_CALLER_RATE requests
     * a second (100), PIER_CALLER_BURST at once after a pause (200), PIER_CALLER_QUEUE waiting
     * (256), then 429.
     */
    pace: { rate: number; burst: number; queue: number };
    httpPort: number;
    baseUrl: string;
    downloadPort: number;
    downloadUrl: string;
    sftpPort: number;
    sftpHost: string;
    /** `postgres://…` or a SQLite file path. */
    databaseUrl: string;
    /** Directory of uploaded files (update sites, assets, workflows); several instances may share it. */
    storageDir: string;
    /** Defaults for every product; staff may override them per product (`pier staff set-limits`). */
    limits: FileLimits;
    /** Concurrent SFTP sessions one product may hold on one instance. */
    sftpMaxSessions: number;
    /** Seconds a new SFTP connection has to log in before it is closed (PIER_SFTP_LOGIN_TIMEOUT, 15). */
    sftpLoginTimeoutSeconds: number;
    /** Seconds a logged-in SFTP session may go without a request before it is closed (PIER_SFTP_IDLE_TIMEOUT, 900). */
    sftpIdleTimeoutSeconds: number;
    /** Seconds without writes to a label before it is re-crawled automatically; 0 turns that off. */
    crawlSettleSeconds: number;
    /** Releases kept per label for a rollback, the current one included (PIER_RELEASES_KEPT, default 3, at least 2). */
    releasesKept: number;
    /** Bytes of node snapshots of one product's releases kept for the changes page (PIER_RELEASE_SNAPSHOT_BYTES, default 32 MiB). */
    releaseSnapshotBytes: number;
    /** Heap of the worker thread a crawl runs in, MiB (PIER_CRAWL_MAX_MEMORY_MB, default 512). */
    crawlMaxMemoryMb: number;
    /** Wall time one crawl of one label may take (PIER_CRAWL_TIMEOUT_SECONDS, default 600). */
    crawlTimeoutSeconds: number;
    /** Name prefixes of the platform's core units, for labels' platform ranges (PIER_PLATFORM_CORE_PREFIXES, default `org.knime.`). */
    platformCorePrefixes: string[];
    /**
     * Node categories the platform itself declares (PIER_PLATFORM_CATEGORIES, KNIME's top-level
     * categories by default): a node placed under one is not warned about as undeclared, and its
     * path is named with the platform's name for it.
     */
    platformCategories: PlatformCategory[];
    /**
     * What a product's node catalog may hold: nodes listed per label (PIER_CRAWL_MAX_NODES, default
     * 2000) and bytes of node data (descriptions, icons) every label together (PIER_NODE_DATA_QUOTA,
     * default 32M). A crawl past either lists what fits and says so in its report.
     */
    nodeLimits: { perLabel: number; productBytes: number };
    /** Wall time rendering one product page's Markdown may take (PIER_PAGE_RENDER_TIMEOUT_SECONDS, default 10). */
    pageRenderTimeoutSeconds: number;
    /**
     * Worker threads rendering product pages side by side (PIER_PAGE_RENDER_WORKERS; default 2,
     * or 1 on a single CPU). A product uses one at a time, so with 2 or more one product's slow
     * renders always leave a worker to the others.
     */
    pageRenderWorkers: number;
    /**
     * Render time one product may use at once (PIER_PAGE_RENDER_BUDGET_SECONDS, default 30);
     * past it the product earns back a tenth of wall time and its page is served from its last
     * render meanwhile.
     */
    pageRenderBudgetSeconds: number;
    /**
     * How long a shared cache (a CDN in front) may serve a page before asking again
     * (PIER_PAGE_SHARED_MAX_AGE, seconds, default 30): `s-maxage` of the pages' Cache-Control.
     * Browsers always revalidate (a 304 when unchanged); 0 makes shared caches revalidate too.
     */
    pageSharedMaxAgeSeconds: number;
    /**
     * Trusted publishing: CI OIDC ID tokens exchanged for short-lived credentials.
     * `audience` is the `aud` the ID token must carry (PIER_OIDC_AUDIENCE, default PIER_BASE_URL);
     * the issuers are GitHub Actions' and GitLab's (PIER_OIDC_GITHUB_ISSUER, PIER_OIDC_GITLAB_ISSUER),
     * https only except loopback addresses.
     */
    oidc: { audience: string; githubIssuer: string; gitlabIssuer: string };
  };
  runner: {
    port: number;
    url: string;
    databaseUrl: string;
    /** Admin key for executors; null disables the scheme. */
    apiKey: string | null;
    /**
     * The token that creating the first administrator needs (RUNNER_SETUP_TOKEN, for unattended
     * installs); null = a new one at every start while no user exists, printed as a link.
     */
    setupToken: string | null;
    /** HS256 secret for the web UI's JWT; null = generate once and keep in the runner database. */
    jwtSecret: string | null;
    /** Workflow archives; every instance of one runner must share it (RUNNER_STORAGE_DIR). */
    storageDir: string;
    /** Lifetime of OAuth access tokens in seconds (RUNNER_OAUTH_ACCESS_TOKEN_TTL, default 1 hour). */
    oauthAccessTokenTtl: number;
    /** Days finished runs are kept (RUNNER_RETENTION_DAYS, default 30); 0 keeps them forever. */
    retentionDays: number;
    /** Executors: a held run is lost after this many seconds without a heartbeat (RUNNER_LEASE_SECONDS, 60). */
    leaseSeconds: number;
    /** A run is taken at most this many times before it fails as "executor lost" (RUNNER_MAX_ATTEMPTS, 3). */
    maxAttempts: number;
    /** Seconds between lost-executor sweeps (RUNNER_SWEEP_SECONDS, 5). */
    sweepSeconds: number;
    /** Largest output file an executor may upload (RUNNER_MAX_OUTPUT_BYTES, 1G). */
    maxOutputBytes: number;
    /**
     * Log text one attempt of a run may store (RUNNER_MAX_LOG_BYTES, 256M, UTF-8 bytes): the
     * rest is dropped, with one line saying so, so no command's output can fill the database.
     */
    maxLogBytes: number;
    /**
     * Bytes the stored workflow versions of one project may take together
     * (RUNNER_PROJECT_STORAGE_BYTES, 10G); 0 = no limit. An upload that would pass it is refused.
     */
    projectStorageBytes: number;
    /**
     * Pacing of each caller (a user, or an address without credentials; the admin key is not
     * paced): RUNNER_CALLER_RATE requests a second sustained (100), RUNNER_CALLER_BURST at once
     * after a pause (200), RUNNER_CALLER_QUEUE waiting for their turn (256), then 429.
     */
    pace: { rate: number; burst: number; queue: number };
  };
}

export interface FileLimits {
  /** Bytes a product may store in total. */
  quotaBytes: number;
  /** Files a product may store in total. */
  quotaFiles: number;
  /** Largest single file. */
  maxFileBytes: number;
  /** Folders a product may have (besides its three fixed ones); files count against quotaFiles. */
  quotaFolders: number;
}

/** One release is the current one; a rollback needs at least one more. */
function releasesKept(env: Env): number {
  const n = count(env, 'PIER_RELEASES_KEPT', 3, 1000);
  if (n < 2) throw new ConfigError('PIER_RELEASES_KEPT', 'must be at least 2: the current release and one to roll back to');
  return n;
}

export const DEFAULT_LIMITS: FileLimits = { quotaBytes: 5 * 1024 ** 3, quotaFiles: 100_000, maxFileBytes: 2 * 1024 ** 3, quotaFolders: 10_000 };

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `expected an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(name, `expected an http or https URL, got "${raw}"`);
  }
  if (parsed.search || parsed.hash) throw new ConfigError(name, 'must not contain a query or fragment');
  // Public URLs are compared byte for byte (OAuth issuer, page links): never a trailing slash.
  return raw.replace(/\/+$/, '');
}

/**
 * An OIDC issuer URL: https, or http only on a loopback address (a local test issuer). Its keys
 * decide who may publish, so a plain-http issuer on a network would let anyone on the path
 * swap them.
 */
function issuerUrl(env: Env, name: string, fallback: string): string {
  const value = url(env, name, fallback);
  const parsed = new URL(value);
  if (parsed.protocol === 'https:') return value;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
  if (!loopback) throw new ConfigError(name, `must be an https URL (http only on a loopback address), got "${value}"`);
  return value;
}

/** <PREFIX>_CALLER_RATE, _BURST and _QUEUE (0 refuses at once instead of queueing). */
function callerPace(env: Env, prefix: 'PIER' | 'RUNNER'): { rate: number; burst: number; queue: number } {
  return {
    rate: count(env, `${prefix}_CALLER_RATE`, 100, 1_000_000),
    burst: count(env, `${prefix}_CALLER_BURST`, 200, 1_000_000),
    queue: env[`${prefix}_CALLER_QUEUE`] === '0' ? 0 : count(env, `${prefix}_CALLER_QUEUE`, 256, 100_000),
  };
}

/** PIER_OIDC_AUDIENCE: any non-empty string without spaces (an audience need not be a URL). */
function oidcAudience(env: Env, baseUrl: string): string {
  const raw = env.PIER_OIDC_AUDIENCE;
  if (raw === undefined || raw === '') return baseUrl;
  if (!/^[\x21-\x7e]{1,255}$/.test(raw)) throw new ConfigError('PIER_OIDC_AUDIENCE', 'expected 1 to 255 visible ASCII characters (no spaces)');
  return raw;
}

function databaseUrl(env: Env, name: string, dataDir: string, file: string): string {
  const raw = env[name];
  if (!raw) return path.join(dataDir, file);
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError(name, 'is not a valid postgres:// URL');
    }
    return raw;
  }
  if (raw.includes('://')) throw new ConfigError(name, 'expected postgres://… or a SQLite file path');
  return path.resolve(raw);
}

function trustProxy(env: Env, name: string): TrustProxy {
  const raw = (env[name] ?? '').trim();
  if (raw === '' || raw === 'off' || raw === 'false' || raw === '0') return false;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 32) throw new ConfigError(name, `a hop count of ${hops} is not plausible (1-32)`);
    return hops;
  }
  const entries = raw.split(',').map((x) => x.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const badPrefix = prefix !== undefined && (!/^\d+$/.test(prefix) || Number(prefix) > max);
    if (family === 0 || badPrefix || extra !== undefined) {
      throw new ConfigError(name, `"${entry}" is not an IP address or CIDR block; use off, a hop count, or a comma-separated list such as 10.0.0.0/8,127.0.0.1`);
    }
  }
  return entries;
}

/** Comma-separated unit name prefixes (`org.knime.`): each a dotted name start, nothing else. */
function corePrefixes(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return ['org.knime.'];
  const entries = raw.split(',').map((x) => x.trim()).filter(Boolean);
  if (entries.length === 0 || entries.length > 32) throw new ConfigError(name, 'expected 1 to 32 comma-separated unit name prefixes, such as org.knime.');
  for (const e of entries) {
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$/.test(e)) throw new ConfigError(name, `"${e}" is not a unit name prefix (letters, digits, ".", "_", "-"), such as org.knime.`);
  }
  return entries;
}

/** PIER_PLATFORM_CATEGORIES (platform-categories.ts). */
function platformCategories(env: Env, name: string): PlatformCategory[] {
  const parsed = parsePlatformCategories(env[name]);
  if ('error' in parsed) throw new ConfigError(name, parsed.error);
  return parsed.categories;
}

/** `on`/`off` (also true/false, 1/0, yes/no); empty or unset is `fallback`. */
function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(name, `expected on or off, got "${env[name]}"`);
}

/** PIER_METRICS_PORT / PIER_METRICS_HOST; `taken` are the parts' own ports, which it cannot share. */
function metricsSettings(env: Env, taken: number[]): Config['metrics'] {
  const raw = env.PIER_METRICS_PORT;
  // Unlike the parts' ports, 0 is "off" here, not "any free port": nobody could find the page.
  const metricsPort = raw === undefined || raw === '' ? 0 : port(env, 'PIER_METRICS_PORT', 0);
  if (metricsPort !== 0 && taken.includes(metricsPort)) {
    throw new ConfigError('PIER_METRICS_PORT', `port ${metricsPort} is already a part's port (PIER_HTTP_PORT, PIER_DOWNLOAD_PORT, PIER_SFTP_PORT, RUNNER_PORT)`);
  }
  const host = env.PIER_METRICS_HOST || '127.0.0.1';
  if (isIP(host) === 0 && !/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(host)) {
    throw new ConfigError('PIER_METRICS_HOST', `expected an IP address or a host name, got "${host}"`);
  }
  return { port: metricsPort, host };
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(env.PIER_DATA_DIR || './data');
  const host = env.PIER_HOST || '127.0.0.1';
  const logLevel = (env.PIER_LOG_LEVEL || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('PIER_LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`);
  }
  const httpPort = port(env, 'PIER_HTTP_PORT', 8080);
  const downloadPort = port(env, 'PIER_DOWNLOAD_PORT', 8081);
  const runnerPort = port(env, 'RUNNER_PORT', 8090);
  const apiKey = env.API_KEY || null;
  // 32 characters: a key worth guessing at must not be short enough to guess (failures are
  // also scored per address, runner/auth/guard.ts).
  if (apiKey !== null && apiKey.length < 32) {
    throw new ConfigError('API_KEY', 'must be at least 32 characters (or unset to disable the admin key)');
  }
  // An HTTP header carries it byte for byte (RFC 9110 §5.5) and the scheme's value is trimmed:
  // only visible ASCII can arrive as set, so any other key could never match.
  if (apiKey !== null && !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw new ConfigError('API_KEY', 'must be visible ASCII characters only (no spaces, no other characters)');
  }
  const setupToken = env.RUNNER_SETUP_TOKEN || null;
  if (setupToken !== null && setupToken.length < 32) {
    throw new ConfigError('RUNNER_SETUP_TOKEN', 'must be at least 32 characters (or unset to generate a one-time link at start)');
  }
  const jwtSecret = env.JWT_SECRET || null;
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('JWT_SECRET', 'must be at least 32 bytes (or unset to generate one in the runner database)');
  }
  return {
    host,
    trustProxy: trustProxy(env, 'PIER_TRUST_PROXY'),
    dataDir,
    logLevel,
    metrics: metricsSettings(env, [httpPort, downloadPort, runnerPort, port(env, 'PIER_SFTP_PORT', 2222)]),
    drainSeconds: seconds(env, 'PIER_DRAIN_SECONDS', 30, 0, 3600),
    drainDelaySeconds: seconds(env, 'PIER_DRAIN_DELAY_SECONDS', 5, 0, 600),
    requestLog: onOff(env, 'PIER_REQUEST_LOG', true),
    publishing: {
      pace: callerPace(env, 'PIER'),
      httpPort,
      baseUrl: url(env, 'PIER_BASE_URL', `http://localhost:${httpPort}`),
      downloadPort,
      downloadUrl: url(env, 'PIER_DOWNLOAD_URL', `http://localhost:${downloadPort}`),
      sftpPort: port(env, 'PIER_SFTP_PORT', 2222),
      sftpHost: env.PIER_SFTP_HOST || 'localhost',
      databaseUrl: databaseUrl(env, 'PIER_DATABASE_URL', dataDir, 'pier.sqlite'),
      storageDir: path.resolve(env.PIER_STORAGE_DIR || path.join(dataDir, 'storage')),
      limits: {
        quotaBytes: size(env, 'PIER_QUOTA_BYTES', DEFAULT_LIMITS.quotaBytes),
        quotaFiles: count(env, 'PIER_QUOTA_FILES', DEFAULT_LIMITS.quotaFiles, 2 ** 31 - 1),
        maxFileBytes: size(env, 'PIER_MAX_FILE_BYTES', DEFAULT_LIMITS.maxFileBytes),
        quotaFolders: count(env, 'PIER_QUOTA_FOLDERS', DEFAULT_LIMITS.quotaFolders, 2 ** 31 - 1),
      },
      sftpMaxSessions: count(env, 'PIER_SFTP_MAX_SESSIONS', 8, 1000),
      sftpLoginTimeoutSeconds: seconds(env, 'PIER_SFTP_LOGIN_TIMEOUT', 15, 1, 600),
      sftpIdleTimeoutSeconds: seconds(env, 'PIER_SFTP_IDLE_TIMEOUT', 900, 1, 86_400),
      crawlSettleSeconds: env.PIER_CRAWL_SETTLE_SECONDS === '0' ? 0 : count(env, 'PIER_CRAWL_SETTLE_SECONDS', 60, 86_400),
      releasesKept: releasesKept(env),
      releaseSnapshotBytes: size(env, 'PIER_RELEASE_SNAPSHOT_BYTES', 32 * 1024 ** 2),
      crawlMaxMemoryMb: mebibytes(env, 'PIER_CRAWL_MAX_MEMORY_MB', 512, 32, 16_384),
      crawlTimeoutSeconds: seconds(env, 'PIER_CRAWL_TIMEOUT_SECONDS', 600, 1, 86_400),
      platformCorePrefixes: corePrefixes(env, 'PIER_PLATFORM_CORE_PREFIXES'),
      platformCategories: platformCategories(env, 'PIER_PLATFORM_CATEGORIES'),
      nodeLimits: {
        perLabel: count(env, 'PIER_CRAWL_MAX_NODES', 2_000, 1_000_000),
        productBytes: size(env, 'PIER_NODE_DATA_QUOTA', 32 * 1024 * 1024),
      },
      pageRenderTimeoutSeconds: seconds(env, 'PIER_PAGE_RENDER_TIMEOUT_SECONDS', 10, 1, 600),
      pageRenderWorkers: count(env, 'PIER_PAGE_RENDER_WORKERS', os.availableParallelism() >= 2 ? 2 : 1, 64),
      pageRenderBudgetSeconds: seconds(env, 'PIER_PAGE_RENDER_BUDGET_SECONDS', 30, 1, 86_400),
      pageSharedMaxAgeSeconds: seconds(env, 'PIER_PAGE_SHARED_MAX_AGE', 30, 0, 86_400),
      oidc: {
        // Compared with the token's `aud` byte for byte: no trailing slash, like PIER_BASE_URL.
        audience: oidcAudience(env, url(env, 'PIER_BASE_URL', `http://localhost:${httpPort}`)),
        githubIssuer: issuerUrl(env, 'PIER_OIDC_GITHUB_ISSUER', 'https://token.actions.githubusercontent.com'),
        gitlabIssuer: issuerUrl(env, 'PIER_OIDC_GITLAB_ISSUER', 'https://gitlab.com'),
      },
    },
    runner: {
      port: runnerPort,
      url: url(env, 'RUNNER_URL', `http://localhost:${runnerPort}`),
      databaseUrl: databaseUrl(env, 'RUNNER_DATABASE_URL', dataDir, 'runner.sqlite'),
      apiKey,
      jwtSecret,
      setupToken,
      storageDir: path.resolve(env.RUNNER_STORAGE_DIR || path.join(dataDir, 'runner')),
      oauthAccessTokenTtl: seconds(env, 'RUNNER_OAUTH_ACCESS_TOKEN_TTL', 3600, 60, 86_400),
      retentionDays: days(env, 'RUNNER_RETENTION_DAYS', 30, 36_500),
      leaseSeconds: seconds(env, 'RUNNER_LEASE_SECONDS', 60, 2, 3600),
      maxAttempts: count(env, 'RUNNER_MAX_ATTEMPTS', 3, 100),
      sweepSeconds: seconds(env, 'RUNNER_SWEEP_SECONDS', 5, 1, 3600),
      maxOutputBytes: size(env, 'RUNNER_MAX_OUTPUT_BYTES', 1024 ** 3),
      maxLogBytes: size(env, 'RUNNER_MAX_LOG_BYTES', 256 * 1024 ** 2),
      projectStorageBytes: sizeOrOff(env, 'RUNNER_PROJECT_STORAGE_BYTES', 10 * 1024 ** 3),
      pace: callerPace(env, 'RUNNER'),
    },
  };
}

/**
 * Every environment variable `loadConfig` reads, taken from `loadConfig` itself (it reads an
 * empty environment through a recording proxy), so the list cannot fall behind a new setting.
 * Every read is unconditional; a name read only when another variable is set would be missed,
 * and a test checks that every name this file mentions is listed. The executor hides these
 * from commands: they hold the service's secrets (JWT_SECRET, API_KEY, database URLs).
 */
export function configVariables(): string[] {
  const read = new Set<string>();
  const record = (name: string | symbol) => typeof name === 'string' && read.add(name);
  const empty = new Proxy({} as Env, {
    get: (_target, name) => void record(name),
    has: (_target, name) => !record(name),
  });
  loadConfig(empty);
  return [...read].sort();
}
