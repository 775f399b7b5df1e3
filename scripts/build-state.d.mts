// Types of build-state.mjs (plain JavaScript: bin/pier.js runs it without a TypeScript loader).
export const SERVER_DIR: string;
export const CURRENT_FILE: string;
export function sourceFingerprint(root: string): string;
export function currentBuild(root: string): { entry: string; reason: null } | { entry: null; reason: 'missing' | 'stale' };
