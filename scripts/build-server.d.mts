// Types of build-server.mjs (plain JavaScript: bin/pier.js runs it without a TypeScript loader).
export const WORKER_ENTRIES: Record<string, string>;
export function buildServer(options?: { root?: string; log?: (line: string) => void }): Promise<{ entry: string; build: string; ms: number }>;
