/**
 * Runs one job of a generated GitHub Actions workflow on this machine, the way a runner would
 * for the parts the workflow uses: the trigger filter, `${{ }}` expressions over the github,
 * env, vars, secrets, inputs, steps and needs contexts, the `run:` steps in order in `bash -e -o
 * pipefail` with the environment GitHub gives (GITHUB_REF, GITHUB_REF_NAME, GITHUB_OUTPUT,
 * GITHUB_ENV, GITHUB_PATH…), the job's outputs and concurrency group, and — only when the job's
 * permissions grant `id-token: write` (a job's `permissions:` replaces the workflow's) —
 * ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN served by a loopback stand-in that asks the local OIDC
 * issuer for a token with GitHub's claim shapes for the requested audience.
 * Jobs run one at a time, each in the workspace the test gives (a fresh folder, as each job gets
 * a machine of its own); a job's `needs` must have run and succeeded. upload-artifact and
 * download-artifact are played by a folder shared between the jobs of a run. Every `uses:` must
 * be pinned by a full commit SHA; other actions, and any step the test names, are replaced by
 * stubs (by step id or action name). An expression or an action the executor does not know
 * fails the run, so the test cannot pass by skipping what it ran.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import YAML from 'yaml';
import type { LocalIssuer } from './oidc-issuer.js';

type Obj = Record<string, unknown>;

export interface StepContext {
  workspace: string;
  /** The step's `with:` inputs, expressions evaluated. */
  with: Record<string, string>;
  /** The step's environment, as a `run:` step would see it. */
  env: Record<string, string>;
  /** Add to GITHUB_ENV / GITHUB_PATH as an action would. */
  setEnv(name: string, value: string): void;
  addPath(dir: string): void;
}

export interface GithubRun {
  workflowFile: string;
  /** The job's working folder (GITHUB_WORKSPACE). */
  workspace: string;
  /** The repository the workflow file is read from (default: the workspace). */
  repo?: string;
  job: string;
  event: { name: 'push' | 'workflow_dispatch'; ref: string; inputs?: Record<string, string> };
  repository: { name: string; id: string; ownerId: string };
  vars?: Record<string, string>;
  secrets?: Record<string, string>;
  issuer: LocalIssuer;
  /** Replaces the step with this `id`, or the action of this name (`owner/repo`, without the ref). */
  stubs: Record<string, (ctx: StepContext) => void | Promise<void>>;
  /** The results of the jobs this one `needs` (by job id). */
  needs?: Record<string, GithubRunResult>;
  /** Where upload-artifact puts what download-artifact takes (one folder per workflow run). */
  artifacts?: string;
  /** Base environment of the runner machine (PATH, HOME). */
  machineEnv: Record<string, string>;
}

export interface StepResult {
  name: string;
  kind: 'run' | 'stub' | 'skipped';
  exitCode: number;
  output: string;
}

export interface GithubRunResult {
  triggered: boolean;
  steps: StepResult[];
  ok: boolean;
  /** The ID tokens the stand-in handed out (their claims), in order. */
  idTokenRequests: { audience: string }[];
  /** Whether the job could ask for an ID token at all (ACTIONS_ID_TOKEN_REQUEST_URL was set). */
  idTokenOffered: boolean;
  /** The job's `outputs:`, evaluated after its steps. */
  outputs: Record<string, string>;
  /** The job's concurrency group (its own, else the workflow's), evaluated; null without one. */
  concurrency: string | null;
}

/** `owner/repo@<40 hex>`: an action pinned by commit (a tag or branch can be moved to other code). */
const PINNED = /^([\w.-]+\/[\w.-]+)@([0-9a-f]{40})$/;

/** The folders and files of upload-artifact's `path:` lines (a `*` in the last segment is a glob). */
function artifactFiles(workspace: string, lines: string[]): { root: string; files: string[] } {
  const matched: string[] = [];
  const roots: string[] = [];
  for (const line of lines) {
    const dir = line.includes('*') ? path.posix.dirname(line) : line;
    roots.push(dir);
    if (line.includes('*')) {
      const re = new RegExp(`^${path.posix.basename(line).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
      const full = path.join(workspace, dir);
      for (const name of fs.existsSync(full) ? fs.readdirSync(full) : []) if (re.test(name)) matched.push(path.posix.join(dir, name));
    } else if (fs.existsSync(path.join(workspace, line))) matched.push(line);
  }
  // The least common ancestor of the search paths is the artifact's root (upload-artifact's README).
  const parts = roots.map((r) => r.split('/'));
  const common: string[] = [];
  for (let i = 0; parts.every((p) => p[i] !== undefined && p[i] === parts[0]![i]); i++) common.push(parts[0]![i]!);
  return { root: common.join('/'), files: matched };
}

/** upload-artifact and download-artifact, with a folder as the run's artifact store. */
async function artifactAction(action: string, ctx: StepContext, store: string): Promise<{ code: number; output: string }> {
  const name = ctx.with.name ?? 'artifact';
  if (action === 'actions/upload-artifact') {
    const lines = (ctx.with.path ?? '').split('\n').map((l) => l.trim()).filter(Boolean);
    const { root, files } = artifactFiles(ctx.workspace, lines);
    if (files.length === 0) return { code: ctx.with['if-no-files-found'] === 'error' ? 1 : 0, output: `no files found for ${lines.join(', ')}` };
    for (const f of files) fs.cpSync(path.join(ctx.workspace, f), path.join(store, name, path.posix.relative(root, f)), { recursive: true });
    return { code: 0, output: `uploaded ${files.join(', ')} as ${name}` };
  }
  const from = path.join(store, name);
  if (!fs.existsSync(from)) return { code: 1, output: `no artifact ${name}` };
  fs.cpSync(from, path.join(ctx.workspace, ctx.with.path ?? '.'), { recursive: true });
  return { code: 0, output: `downloaded ${name} to ${ctx.with.path ?? '.'}` };
}

// ---------------------------------------------------------------------------------------------
// Expressions (docs.github.com "Evaluate expressions in workflows and actions"): literals,
// context paths, !, ==, !=, &&, || and parentheses. `||`/`&&` return an operand, as GitHub's do.

type Value = string | number | boolean | null | Obj;

function tokenize(src: string): string[] {
  const tokens: string[] = [];
  const re = /\s*(?:('(?:[^']|'')*')|(\|\||&&|==|!=|!|\(|\))|([A-Za-z_][A-Za-z0-9_.-]*)|(\d+(?:\.\d+)?))/y;
  let i = 0;
  while (i < src.length) {
    re.lastIndex = i;
    const m = re.exec(src);
    if (!m) {
      if (/^\s*$/.test(src.slice(i))) break;
      throw new Error(`expression not understood at "${src.slice(i)}"`);
    }
    tokens.push((m[1] ?? m[2] ?? m[3] ?? m[4])!);
    i = re.lastIndex;
  }
  return tokens;
}

function truthy(v: Value): boolean {
  return !(v === null || v === false || v === 0 || v === '');
}

function evaluate(src: string, contexts: Record<string, Obj>): Value {
  const tokens = tokenize(src);
  let pos = 0;
  const peek = () => tokens[pos];
  const next = () => tokens[pos++]!;
  const primary = (): Value => {
    const t = next();
    if (t === undefined) throw new Error(`unexpected end of ${src}`);
    if (t === '(') {
      const v = or();
      if (next() !== ')') throw new Error(`missing ) in ${src}`);
      return v;
    }
    if (t === '!') return !truthy(primary());
    if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
    if (/^\d/.test(t)) return Number(t);
    if (t === 'true' || t === 'false') return t === 'true';
    if (t === 'null') return null;
    if (peek() === '(') throw new Error(`function ${t}() is not supported by the executor`);
    const [root, ...rest] = t.split('.');
    if (!(root! in contexts)) throw new Error(`unknown context "${root}" in ${src}`);
    let v: Value = contexts[root!]!;
    for (const key of rest) v = v && typeof v === 'object' ? ((v as Obj)[key] as Value) ?? null : null;
    return v ?? null;
  };
  const equality = (): Value => {
    let left = primary();
    while (peek() === '==' || peek() === '!=') {
      const op = next();
      const right = primary();
      left = op === '==' ? left === right : left !== right;
    }
    return left;
  };
  const and = (): Value => {
    let left = equality();
    while (peek() === '&&') {
      next();
      const right = equality();
      left = truthy(left) ? right : left;
    }
    return left;
  };
  const or = (): Value => {
    let left = and();
    while (peek() === '||') {
      next();
      const right = and();
      left = truthy(left) ? left : right;
    }
    return left;
  };
  const value = or();
  if (pos !== tokens.length) throw new Error(`trailing tokens in ${src}`);
  return value;
}

/** Interpolates every `${{ }}` in a string; null becomes '' as in GitHub. */
export function interpolate(text: string, contexts: Record<string, Obj>): string {
  return text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, expr: string) => {
    const v = evaluate(expr.trim(), contexts);
    return v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  });
}

// ---------------------------------------------------------------------------------------------

/** GitHub's filter patterns: `*` matches anything but `/`, `**` anything. */
function globMatch(pattern: string, value: string): boolean {
  const re = pattern
    .split('**')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
    .join('.*');
  return new RegExp(`^${re}$`).test(value);
}

function triggered(on: Obj, event: GithubRun['event']): boolean {
  if (event.name === 'workflow_dispatch') return 'workflow_dispatch' in on;
  const push = on.push as Obj | undefined;
  if (!push) return false;
  if (event.ref.startsWith('refs/tags/')) {
    const tags = push.tags as string[] | undefined;
    return !!tags && tags.some((p) => globMatch(p, event.ref.slice('refs/tags/'.length)));
  }
  const branches = push.branches as string[] | undefined;
  return !!branches && branches.some((p) => globMatch(p, event.ref.slice('refs/heads/'.length)));
}

/** The `KEY=value` and `KEY<<EOF` lines of GITHUB_ENV / GITHUB_OUTPUT files. */
function readKeyValues(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== heredoc[2]; i++) body.push(lines[i]!);
      out[heredoc[1]!] = body.join('\n');
    } else if (line.includes('=')) out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  }
  return out;
}

/** The loopback stand-in for GitHub's ID token request endpoint. */
async function idTokenService(issuer: LocalIssuer, requestToken: string, claims: () => Obj, log: { audience: string }[]): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname !== '/idtoken' || req.headers.authorization !== `Bearer ${requestToken}`) {
      res.statusCode = 401;
      res.end('{"message":"bad request token"}');
      return;
    }
    // GitHub's default audience is the repository owner's URL; a client names its own.
    const audience = url.searchParams.get('audience') ?? 'https://github.com/owner';
    log.push({ audience });
    res.end(JSON.stringify({ value: await issuer.sign(claims(), audience) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // Like GitHub's, the URL already has a query: clients append `&audience=`.
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/idtoken?api-version=2.0`, close: () => new Promise((r) => server.close(() => r())) };
}

function runShell(script: string, shell: string, env: Record<string, string>, cwd: string, file: string): Promise<{ code: number; output: string }> {
  fs.writeFileSync(file, script);
  // docs.github.com: `shell: bash` runs `bash --noprofile --norc -eo pipefail {0}`.
  if (shell !== 'bash') throw new Error(`shell "${shell}" is not run by the executor (stub the step)`);
  return new Promise((resolve) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => {
      output += c;
    });
    child.stderr.on('data', (c) => {
      output += c;
    });
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

export async function runGithubJob(run: GithubRun): Promise<GithubRunResult> {
  const wf = YAML.parse(fs.readFileSync(path.join(run.repo ?? run.workspace, run.workflowFile), 'utf8')) as Obj;
  const result: GithubRunResult = {
    triggered: triggered(wf.on as Obj, run.event),
    steps: [],
    ok: false,
    idTokenRequests: [],
    idTokenOffered: false,
    outputs: {},
    concurrency: null,
  };
  if (!result.triggered) return result;
  const job = (wf.jobs as Record<string, Obj>)[run.job];
  if (!job) throw new Error(`no job ${run.job}`);
  // docs.github.com "Assigning permissions to jobs": a job's permissions replace the workflow's.
  const permissions = ((job.permissions ?? wf.permissions) as Obj | undefined) ?? {};
  const needed = job.needs === undefined ? [] : Array.isArray(job.needs) ? (job.needs as string[]) : [String(job.needs)];
  const needs: Obj = {};
  for (const id of needed) {
    const done = run.needs?.[id];
    if (!done?.ok) throw new Error(`job ${run.job} needs ${id}, which has not run and succeeded`);
    needs[id] = { result: 'success', outputs: done.outputs };
  }

  const ref = run.event.ref;
  const refName = ref.replace(/^refs\/(?:heads|tags)\//, '');
  const runId = String(1000 + Math.floor(Math.random() * 1e6));
  const github: Obj = {
    ref,
    ref_name: refName,
    ref_type: ref.startsWith('refs/tags/') ? 'tag' : 'branch',
    event_name: run.event.name,
    repository: run.repository.name,
    repository_id: run.repository.id,
    repository_owner: run.repository.name.split('/')[0],
    repository_owner_id: run.repository.ownerId,
    workflow_ref: `${run.repository.name}/${run.workflowFile}@${ref}`,
    sha: randomBytes(20).toString('hex'),
    run_id: runId,
    run_attempt: '1',
    workspace: run.workspace,
  };
  const temp = fs.mkdtempSync(path.join(path.dirname(run.workspace), 'runner-temp-'));
  const requestToken = randomBytes(24).toString('hex');
  const claims = (): Obj => ({
    sub: `repo:${github.repository}:ref:${ref}`,
    ref,
    ref_type: github.ref_type,
    sha: github.sha,
    repository: github.repository,
    repository_id: github.repository_id,
    repository_owner: github.repository_owner,
    repository_owner_id: github.repository_owner_id,
    repository_visibility: 'private',
    actor: 'vendor-dev',
    actor_id: '4242',
    workflow: wf.name,
    workflow_ref: github.workflow_ref,
    workflow_sha: github.sha,
    job_workflow_ref: github.workflow_ref,
    job_workflow_sha: github.sha,
    event_name: run.event.name,
    run_id: runId,
    run_number: '7',
    run_attempt: '1',
    runner_environment: 'github-hosted',
  });
  const idTokens = permissions['id-token'] === 'write' ? await idTokenService(run.issuer, requestToken, claims, result.idTokenRequests) : null;
  result.idTokenOffered = idTokens !== null;

  const extraPath: string[] = [];
  const exported: Record<string, string> = {};
  const stepsContext: Record<string, Obj> = {};
  const inputs: Obj = run.event.name === 'workflow_dispatch' ? { ...(run.event.inputs ?? {}) } : {};
  const contexts = (env: Obj): Record<string, Obj> => ({ github, env, vars: run.vars ?? {}, secrets: run.secrets ?? {}, inputs, steps: stepsContext, needs, runner: { os: 'Linux', temp } });
  const envMap = (e: unknown, ctx: Record<string, Obj>): Record<string, string> =>
    Object.fromEntries(Object.entries((e as Obj) ?? {}).map(([k, v]) => [k, interpolate(String(v), ctx)]));

  try {
    const concurrency = (job.concurrency ?? wf.concurrency) as Obj | string | undefined;
    if (concurrency !== undefined) result.concurrency = interpolate(typeof concurrency === 'string' ? concurrency : String(concurrency.group), contexts({}));
    const workflowEnv = envMap(wf.env, contexts({}));
    const jobEnv = { ...workflowEnv, ...envMap(job.env, contexts(workflowEnv)) };
    const defaultShell = (((job.defaults as Obj)?.run as Obj)?.shell ?? ((wf.defaults as Obj)?.run as Obj)?.shell ?? 'bash') as string;
    let failed = false;
    for (const [index, step] of (job.steps as Obj[]).entries()) {
      const name = String(step.name ?? step.uses ?? step.id ?? `step ${index + 1}`);
      if (failed) {
        result.steps.push({ name, kind: 'skipped', exitCode: 0, output: '' });
        continue;
      }
      if (step.if !== undefined) throw new Error(`${name}: "if:" is not run by the executor`);
      const base = { ...jobEnv, ...exported };
      const stepEnv = { ...base, ...envMap(step.env, contexts(base)) };
      const files = { GITHUB_OUTPUT: path.join(temp, `output-${index}`), GITHUB_ENV: path.join(temp, `env-${index}`), GITHUB_PATH: path.join(temp, `path-${index}`) };
      for (const f of Object.values(files)) fs.writeFileSync(f, '');
      const env: Record<string, string> = {
        ...run.machineEnv,
        PATH: [...extraPath, run.machineEnv.PATH].join(':'),
        CI: 'true',
        GITHUB_ACTIONS: 'true',
        GITHUB_REF: ref,
        GITHUB_REF_NAME: refName,
        GITHUB_REF_TYPE: String(github.ref_type),
        GITHUB_REPOSITORY: String(github.repository),
        GITHUB_REPOSITORY_ID: String(github.repository_id),
        GITHUB_SHA: String(github.sha),
        GITHUB_EVENT_NAME: run.event.name,
        GITHUB_RUN_ID: runId,
        GITHUB_WORKFLOW_REF: String(github.workflow_ref),
        GITHUB_WORKSPACE: run.workspace,
        RUNNER_TEMP: temp,
        ...files,
        ...(idTokens ? { ACTIONS_ID_TOKEN_REQUEST_URL: idTokens.url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken } : {}),
        ...stepEnv,
      };
      const pinned = step.uses === undefined ? null : PINNED.exec(String(step.uses));
      if (step.uses !== undefined && !pinned) throw new Error(`${name}: ${step.uses} is not pinned by a full commit SHA`);
      const action = pinned?.[1] ?? '';
      const stub = run.stubs[String(step.id ?? '')] ?? (action ? run.stubs[action] : undefined);
      const ctx: StepContext = {
        workspace: run.workspace,
        with: envMap(step.with, contexts(stepEnv)),
        env,
        setEnv: (k, v) => fs.appendFileSync(files.GITHUB_ENV, `${k}=${v}\n`),
        addPath: (d) => fs.appendFileSync(files.GITHUB_PATH, `${d}\n`),
      };
      let code = 0;
      let output = '';
      if (stub) {
        await stub(ctx);
      } else if ((action === 'actions/upload-artifact' || action === 'actions/download-artifact') && run.artifacts) {
        ({ code, output } = await artifactAction(action, ctx, run.artifacts));
      } else if (step.uses) {
        throw new Error(`${name}: no stand-in for ${step.uses}`);
      } else {
        const script = interpolate(String(step.run), contexts(stepEnv));
        ({ code, output } = await runShell(script, String(step.shell ?? defaultShell), env, run.workspace, path.join(temp, `step-${index}.sh`)));
      }
      result.steps.push({ name, kind: stub || step.uses ? 'stub' : 'run', exitCode: code, output });
      if (step.id) stepsContext[String(step.id)] = { outputs: readKeyValues(files.GITHUB_OUTPUT), outcome: code === 0 ? 'success' : 'failure' };
      Object.assign(exported, readKeyValues(files.GITHUB_ENV));
      extraPath.unshift(...fs.readFileSync(files.GITHUB_PATH, 'utf8').split('\n').filter(Boolean).reverse());
      if (code !== 0) failed = true;
    }
    result.ok = !failed;
    if (result.ok) result.outputs = envMap(job.outputs, contexts(jobEnv));
    return result;
  } finally {
    await idTokens?.close();
    fs.rmSync(temp, { recursive: true, force: true });
  }
}
