/**
 * Runs a generated GitLab CI pipeline on this machine, the way GitLab and its runner would for
 * the parts the pipeline uses: `rules: - if:` against the predefined variables, jobs in stage
 * order, job `variables:` under the project's CI/CD variables, each `id_tokens:` entry minted by
 * the local OIDC issuer with GitLab's claim shapes for its `aud`, and the `script:` entries in
 * one `bash -eo pipefail`. Jobs the test names are replaced by stubs; a rule the executor does
 * not understand fails the run.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { LocalIssuer } from './oidc-issuer.js';

type Obj = Record<string, unknown>;

export interface GitlabRun {
  ciFile: string;
  workspace: string;
  project: { path: string; id: string; namespaceId: string };
  pipeline: { source: 'push' | 'web'; tag?: string; branch?: string };
  /** The project's CI/CD variables. */
  variables?: Record<string, string>;
  issuer: LocalIssuer;
  stubJobs: Record<string, (ctx: { workspace: string }) => void | Promise<void>>;
  machineEnv: Record<string, string>;
}

export interface GitlabRunResult {
  jobs: { name: string; kind: 'run' | 'stub'; exitCode: number; output: string }[];
  ok: boolean;
  /** The `aud` of every ID token minted. */
  audiences: string[];
}

const STAGES = ['.pre', 'build', 'test', 'deploy', '.post'];
const RESERVED = new Set(['stages', 'include', 'variables', 'default', 'workflow', 'image', 'services', 'cache', 'before_script', 'after_script']);

function expand(value: string, vars: Record<string, string>): string {
  return value.replace(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g, (_, a: string | undefined, b: string | undefined) => vars[(a ?? b)!] ?? '');
}

/** `$VAR =~ /re/`, `$VAR == "s"`, `$VAR != "s"`, `$VAR` (docs.gitlab.com "CI/CD variable expressions"). */
function ruleMatches(expr: string, vars: Record<string, string>): boolean {
  let m = /^\$([A-Za-z_][A-Za-z0-9_]*)\s*=~\s*\/(.*)\/([a-z]*)$/.exec(expr.trim());
  if (m) return vars[m[1]!] !== undefined && new RegExp(m[2]!, m[3]).test(vars[m[1]!]!);
  m = /^\$([A-Za-z_][A-Za-z0-9_]*)\s*(==|!=)\s*"([^"]*)"$/.exec(expr.trim());
  if (m) return (vars[m[1]!] === m[3]) === (m[2] === '==');
  m = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(expr.trim());
  if (m) return !!vars[m[1]!];
  throw new Error(`rule not understood by the executor: ${expr}`);
}

function runScript(script: string, env: Record<string, string>, cwd: string, file: string): Promise<{ code: number; output: string }> {
  fs.writeFileSync(file, script);
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

export async function runGitlabJob(run: GitlabRun): Promise<GitlabRunResult> {
  const ci = YAML.parse(fs.readFileSync(path.join(run.workspace, run.ciFile), 'utf8')) as Obj;
  const result: GitlabRunResult = { jobs: [], ok: true, audiences: [] };
  const ref = run.pipeline.tag ?? run.pipeline.branch ?? 'main';
  const pipelineId = String(50000 + Math.floor(Math.random() * 1e5));
  const sha = randomBytes(20).toString('hex');
  const predefined: Record<string, string> = {
    CI: 'true',
    GITLAB_CI: 'true',
    CI_SERVER_URL: 'https://gitlab.example.com',
    CI_PROJECT_PATH: run.project.path,
    CI_PROJECT_ID: run.project.id,
    CI_PROJECT_DIR: run.workspace,
    CI_PIPELINE_ID: pipelineId,
    CI_PIPELINE_SOURCE: run.pipeline.source,
    CI_COMMIT_SHA: sha,
    CI_COMMIT_REF_NAME: ref,
    ...(run.pipeline.tag ? { CI_COMMIT_TAG: run.pipeline.tag } : { CI_COMMIT_BRANCH: ref }),
  };
  const jobs = Object.entries(ci)
    .filter(([name, job]) => !RESERVED.has(name) && !name.startsWith('.') && job && typeof job === 'object')
    .map(([name, job]) => ({ name, job: job as Obj }))
    .filter(({ job }) => {
      const rules = job.rules as Obj[] | undefined;
      return !rules || rules.some((r) => r.when !== 'never' && (r.if === undefined || ruleMatches(String(r.if), { ...predefined, ...run.variables })));
    })
    .sort((a, b) => STAGES.indexOf(String(a.job.stage ?? 'test')) - STAGES.indexOf(String(b.job.stage ?? 'test')));

  const temp = fs.mkdtempSync(path.join(path.dirname(run.workspace), 'gitlab-job-'));
  try {
    for (const [index, { name, job }] of jobs.entries()) {
      const jobId = String(900000 + index);
      const vars: Record<string, string> = { ...predefined, CI_JOB_ID: jobId, CI_JOB_NAME: name };
      // Job variables expand the predefined ones; the project's CI/CD variables take precedence.
      for (const [k, v] of Object.entries((job.variables as Obj) ?? {})) vars[k] = expand(String(v), { ...vars, ...run.variables });
      Object.assign(vars, run.variables);
      for (const [k, spec] of Object.entries((job.id_tokens as Record<string, Obj>) ?? {})) {
        const aud = expand(String(spec.aud), vars);
        result.audiences.push(aud);
        vars[k] = await run.issuer.sign(
          {
            sub: `project_path:${run.project.path}:ref_type:${run.pipeline.tag ? 'tag' : 'branch'}:ref:${ref}`,
            namespace_id: run.project.namespaceId,
            namespace_path: run.project.path.split('/')[0],
            project_id: run.project.id,
            project_path: run.project.path,
            project_visibility: 'private',
            user_id: '31',
            user_login: 'vendor-dev',
            pipeline_id: pipelineId,
            pipeline_source: run.pipeline.source,
            job_id: jobId,
            ref,
            ref_type: run.pipeline.tag ? 'tag' : 'branch',
            ref_path: run.pipeline.tag ? `refs/tags/${ref}` : `refs/heads/${ref}`,
            ref_protected: 'true',
            runner_id: 1,
            runner_environment: 'gitlab-hosted',
            sha,
            ci_config_ref_uri: `gitlab.example.com/${run.project.path}//${run.ciFile}@refs/${run.pipeline.tag ? 'tags' : 'heads'}/${ref}`,
            ci_config_sha: sha,
          },
          aud,
        );
      }
      const stub = run.stubJobs[name];
      if (stub) {
        await stub({ workspace: run.workspace });
        result.jobs.push({ name, kind: 'stub', exitCode: 0, output: '' });
        continue;
      }
      const script = [...((job.before_script as string[]) ?? []), ...((job.script as string[]) ?? [])].join('\n');
      const { code, output } = await runScript(script, { ...run.machineEnv, ...vars }, run.workspace, path.join(temp, `${name}.sh`));
      result.jobs.push({ name, kind: 'run', exitCode: code, output });
      if (code !== 0) {
        result.ok = false;
        break;
      }
    }
    return result;
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
}
