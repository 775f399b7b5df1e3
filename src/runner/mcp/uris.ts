/*
 * Stable URIs of the runner's MCP resources (RFC 3986 syntax, a scheme of our own as MCP
 * allows): a run's log and its output files. Ids are URL-safe; output names are percent-encoded.
 */

export const URI_SCHEME = 'pier';
export const LOG_TEMPLATE = `${URI_SCHEME}://runs/{runId}/log`;
export const OUTPUT_TEMPLATE = `${URI_SCHEME}://runs/{runId}/outputs/{name}`;

export function logUri(runId: string): string {
  return `${URI_SCHEME}://runs/${runId}/log`;
}

export function outputUri(runId: string, name: string): string {
  return `${URI_SCHEME}://runs/${runId}/outputs/${encodeURIComponent(name)}`;
}

export type ResourceRef = { kind: 'log'; runId: string } | { kind: 'output'; runId: string; name: string };

const LOG = /^pier:\/\/runs\/([A-Za-z0-9_-]{1,64})\/log$/;
const OUTPUT = /^pier:\/\/runs\/([A-Za-z0-9_-]{1,64})\/outputs\/([^/?#]{1,4096})$/;

/** What a URI names, or null for one that is not ours (or is malformed). */
export function parseResourceUri(uri: string): ResourceRef | null {
  const log = LOG.exec(uri);
  if (log) return { kind: 'log', runId: log[1]! };
  const out = OUTPUT.exec(uri);
  if (!out) return null;
  try {
    return { kind: 'output', runId: out[1]!, name: decodeURIComponent(out[2]!) };
  } catch {
    return null;
  }
}
