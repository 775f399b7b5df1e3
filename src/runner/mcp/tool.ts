import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Access } from '../auth/access.js';
import type { Principal, UserPrincipal } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import type { ConcurrencyLimit } from './limits.js';

/** What a tool gets besides its arguments. */
export interface ToolCall {
  ctx: RunnerContext;
  principal: UserPrincipal;
  /** The caller's credential checked again, as on arrival (401/403 once it no longer holds). */
  recheck(): Promise<Principal>;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
  /** A progress notification, when the client asked for them (MCP `_meta.progressToken`). */
  progress(progress: number, message: string, total?: number): Promise<void>;
}

/** A link to an MCP resource (MCP `resource_link` content) that a result points to. */
export interface ResourceLink {
  uri: string;
  name: string;
  mimeType?: string;
  size?: number;
}

export interface ToolResult<O> {
  /** The structured content: conforms to the tool's output schema. */
  structured: O;
  /** The same, short, for a model or a person to read. */
  text: string;
  links?: ResourceLink[];
}

/** MCP tool annotations (hints for clients: the tool's own access decides what it may do). */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
}

export interface Tool {
  name: string;
  title: string;
  description: string;
  /** Checked exactly as a REST route's declaration is (auth/access.ts), before `run`. */
  access: Access;
  hints: ToolHints;
  input: TSchema;
  output: TSchema;
  /** How many calls of this tool may run at once (long calls: wait_for_run). */
  concurrency?: ConcurrencyLimit;
  /** Argument problems as `field message` (JSON pointer field), none when they fit `input`. */
  problems(args: unknown): { field: string; message: string }[];
  run(call: ToolCall, args: unknown): Promise<ToolResult<unknown>>;
}

interface ToolSpec<I extends TSchema, O extends TSchema> {
  name: string;
  title: string;
  description: string;
  access: Access;
  hints: ToolHints;
  concurrency?: ConcurrencyLimit;
  input: I;
  output: O;
  run(call: ToolCall, args: Static<I>): Promise<ToolResult<Static<O>>>;
}

/** A tool whose arguments are checked against its input schema before it runs. */
export function defineTool<I extends TSchema, O extends TSchema>(spec: ToolSpec<I, O>): Tool {
  const validator = Compile(spec.input);
  return {
    ...spec,
    problems(args) {
      if (validator.Check(args)) return [];
      return [...validator.Errors(args)].slice(0, 10).map((e) => ({ field: e.instancePath || '(arguments)', message: e.message }));
    },
    run: (call, args) => spec.run(call, args as Static<I>),
  };
}

export const READ_ONLY: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true };
