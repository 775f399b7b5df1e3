import type { Principal } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import { LOG_TEMPLATE, logUri, OUTPUT_TEMPLATE, outputUri, type ResourceRef } from './uris.js';

/**
 * The most a resource read returns: a log's last 2 MiB (earlier lines are paged through
 * `GET /api/runs/{id}/logs`), and output files up to 2 MiB (larger ones are downloaded from
 * `GET /api/runs/{id}/outputs/{name}`). A model's context is far smaller than either.
 */
export const MAX_RESOURCE_BYTES = 2 * 1024 * 1024;
/** A log resource holds at most this many lines (empty lines have no bytes to count). */
export const MAX_LOG_LINES = 100_000;
/** Runs whose logs resources/list offers (the newest the caller can see). */
const LISTED_RUNS = 20;

/** Content types read as text; others are text only when they decode as UTF-8 without NUL. */
const TEXT_TYPES = /^(text\/|application\/(json|xml|csv|yaml|x-yaml|javascript|x-ndjson)\b|[^;]*\+(json|xml)\b)/i;

export const RESOURCE_TEMPLATES = [
  { uriTemplate: LOG_TEMPLATE, name: 'run-log', title: 'Log of a run', description: `Every attempt's log of a run as text (its last ${MAX_RESOURCE_BYTES} bytes when longer).`, mimeType: 'text/plain' },
  { uriTemplate: OUTPUT_TEMPLATE, name: 'run-output', title: 'Output file of a run', description: `An output file of a run (name percent-encoded); text as text, other files as base64 blobs; at most ${MAX_RESOURCE_BYTES} bytes.` },
];

export async function listResources(ctx: RunnerContext, principal: Principal) {
  const { items } = await ctx.runs.list(principal, { limit: LISTED_RUNS });
  return items.map((r) => ({ uri: logUri(r.id), name: `run-${r.id}-log`, title: `Log of run ${r.id} (${r.status}, ${r.created_at})`, mimeType: 'text/plain' }));
}

function asText(bytes: Buffer, contentType: string | null): string | null {
  if (contentType && TEXT_TYPES.test(contentType)) return bytes.toString('utf8');
  if (bytes.includes(0)) return null;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** The contents of one resource (404 / 413 as the runs service answers them). */
export async function readResource(ctx: RunnerContext, principal: Principal, uri: string, ref: ResourceRef) {
  if (ref.kind === 'log') {
    const { run, text, truncated } = await ctx.runs.logText(principal, ref.runId, MAX_RESOURCE_BYTES, MAX_LOG_LINES);
    const note = truncated ? `[earlier lines left out: the log is longer than ${MAX_RESOURCE_BYTES} bytes or ${MAX_LOG_LINES} lines; GET /api/runs/${run.id}/logs pages through all of it]\n` : '';
    return { contents: [{ uri, mimeType: 'text/plain', text: note + text }] };
  }
  const { output, bytes } = await ctx.runs.readOutput(principal, ref.runId, ref.name, MAX_RESOURCE_BYTES);
  const canonical = outputUri(ref.runId, output.name);
  const text = asText(bytes, output.content_type);
  // A file stored as bytes that reads as text is shown as text, and said to be.
  const stored = output.content_type === 'application/octet-stream' ? null : output.content_type;
  const mimeType = stored ?? (text === null ? 'application/octet-stream' : 'text/plain');
  return { contents: [text === null ? { uri: canonical, mimeType, blob: bytes.toString('base64') } : { uri: canonical, mimeType, text }] };
}
