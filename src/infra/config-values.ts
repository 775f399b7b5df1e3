/**
 * Readers of single setting values (sizes, counts, ports, durations): each answers the fallback
 * for an unset or empty variable and raises ConfigError naming the variable for a bad value.
 */

export type Env = Record<string, string | undefined>;

/** Raised when an environment variable has a value we cannot use; names the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/** A positive whole number with an optional binary unit: 500, 64k, 200M, 5G (k/M/G/T = 1024^n). */
export function parseSize(raw: string): number | null {
  const m = /^(\d+)\s*([kKmMgGtT])?i?[bB]?$/.exec(raw.trim());
  if (!m) return null;
  const unit = { k: 1, m: 2, g: 3, t: 4 }[(m[2] ?? '').toLowerCase() as 'k'] ?? 0;
  const n = Number(m[1]) * 1024 ** unit;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

export function size(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = parseSize(raw);
  if (n === null) throw new ConfigError(name, `expected a positive size like 500M or 5G, got "${raw}"`);
  return n;
}

/** Like size, but 0 is allowed too (a setting where 0 turns the limit off). */
export function sizeOrOff(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^\s*0+\s*$/.test(raw)) return 0;
  const n = parseSize(raw);
  if (n === null) throw new ConfigError(name, `expected 0 (no limit) or a positive size like 500M or 5G, got "${raw}"`);
  return n;
}

export function count(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new ConfigError(name, `expected a whole number from 1 to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function port(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a port number, got "${raw}"`);
  const n = Number(raw);
  // 0 lets the OS pick a free port (used by tests and benchmarks).
  if (n > 65535) throw new ConfigError(name, `port ${n} is out of range 0-65535`);
  return n;
}

export function mebibytes(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `expected a whole number of MiB from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

export function seconds(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number of seconds, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max} seconds`);
  return n;
}

/** A whole number of days from 0 to `max`. */
export function days(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max) {
    throw new ConfigError(name, `expected a whole number of days from 0 (keep forever) to ${max}, got "${raw}"`);
  }
  return Number(raw);
}
