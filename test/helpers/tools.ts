import { execFileSync } from 'node:child_process';

export const IN_CI = process.env.CI === 'true' || process.env.CI === '1';

/**
 * Whether a system tool is installed. Outside CI a missing tool skips the suite that needs it;
 * in CI it is a failure, never a skip (DESIGN.md "Tests, CI and benchmarks").
 */
export function hasTool(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    if (IN_CI) throw new Error(`required tool "${name}" is missing in CI; install it in .ci/run`);
    return false;
  }
}

/** `{ skip }` option for node:test: a reason string when the tool is missing outside CI. */
export function needsTool(name: string): { skip: string | false } {
  return { skip: hasTool(name) ? false : `${name} is not installed` };
}
