/**
 * `pier ci init`: the spec's generator flag (SFTP rule 5, publishing step (b)) as a command of
 * its own: it inspects the repository, writes a CI pipeline that builds the update site and runs
 * `pier publish` on release, and prints what the staff and the vendor still have to do.
 * `pier ci label`: the label a CI run publishes to (what the generated pipelines call).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../../infra/errors.js';
import { productIdProblem } from '../../publishing/products/slug.js';
import { GITHUB_WORKFLOW_PATH, githubWorkflow } from './github.js';
import { GITLAB_CI_PATH, GITLAB_INCLUDE_PATH, gitlabPipeline } from './gitlab.js';
import { ANSWER_LIMITS, readJsonAnswer } from '../server-answer.js';
import { labelFromEnv, NoLabelError } from './label.js';
import { buildSummary, nextSteps } from './next-steps.js';
import { originUrl, repositoryPath } from './repository.js';

export interface CiInitOptions {
  github?: boolean;
  gitlab?: boolean;
  product: string;
  server?: string;
  audience?: string;
  dir?: string;
  build?: string;
  module?: string;
  force?: boolean;
}

/** A base URL: http(s), no query or fragment, without the trailing slash. */
function baseUrl(raw: string, option: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UsageError(`${option}: "${raw}" is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new UsageError(`${option}: expected an http(s) URL, got "${raw}"`);
  if (u.search || u.hash || u.username || u.password) throw new UsageError(`${option}: a base URL has no query, fragment or credentials`);
  return u.toString().replace(/\/+$/, '');
}

/**
 * The audience GitLab must put in the ID token: what the server announces at /api/publishing
 * (PIER_OIDC_AUDIENCE may differ from the base URL), else the base URL (the server's default).
 */
async function serverAudience(server: string): Promise<{ audience: string; note: string | null }> {
  try {
    const res = await fetch(`${server}/api/publishing`, { signal: AbortSignal.timeout(5000) });
    if (res.ok) {
      const info = (await readJsonAnswer(res, `${server}/api/publishing`, ANSWER_LIMITS.info)) as { trustedPublishing?: { audience?: unknown } } | null;
      const audience = info?.trustedPublishing?.audience;
      if (typeof audience === 'string' && audience) return { audience, note: null };
    }
    return { audience: server, note: `${server}/api/publishing answered ${res.status}; the ID token audience is the base URL (pass --audience if the server says otherwise)` };
  } catch (err) {
    return { audience: server, note: `could not ask ${server}/api/publishing (${err instanceof Error ? err.message : String(err)}); the ID token audience is the base URL (pass --audience if the server says otherwise)` };
  }
}

/** Written to a temporary name and renamed, so a reader never sees half a file. */
function writeFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

export interface CiInitResult {
  file: string;
  text: string;
  lines: string[];
}

export async function ciInit(options: CiInitOptions): Promise<CiInitResult> {
  if (!!options.github === !!options.gitlab) throw new UsageError('choose one provider: --github or --gitlab');
  const problem = productIdProblem(options.product);
  if (problem) throw new UsageError(`--product ${options.product}: ${problem}`);
  if (options.build !== undefined && options.build !== 'tycho' && options.build !== 'python') throw new UsageError(`--build: expected tycho or python, got "${options.build}"`);
  const server = options.server ? baseUrl(options.server, '--server') : null;
  const root = path.resolve(options.dir ?? '.');
  // Loaded here, not with the command line: the XML parser serves `pier ci init` only.
  const { detectBuild } = await import('./detect.js');
  const build = detectBuild(root, { build: options.build as 'tycho' | 'python' | undefined, module: options.module });
  const lines = [`Found a ${buildSummary(build)}.`];

  const provider = options.github ? 'github' : 'gitlab';
  let relative: string;
  let asInclude = false;
  if (provider === 'github') relative = GITHUB_WORKFLOW_PATH;
  else {
    const main = path.join(root, GITLAB_CI_PATH);
    // A .gitlab-ci.yml we wrote ourselves is ours to replace (with --force); any other stays the vendor's.
    asInclude = fs.existsSync(main) && !fs.readFileSync(main, 'utf8').includes('Written by `pier ci init');
    relative = asInclude ? GITLAB_INCLUDE_PATH : GITLAB_CI_PATH;
  }
  const file = path.join(root, relative);
  if (fs.existsSync(file) && !options.force) throw new UsageError(`${relative} exists; pass --force to replace it`);

  if (options.audience !== undefined && !/^[\x21-\x7e]{1,512}$/.test(options.audience)) throw new UsageError('--audience: expected a printable string without spaces');
  let audience = options.audience ?? null;
  if (provider === 'gitlab' && !audience && server) {
    const asked = await serverAudience(server);
    audience = asked.audience;
    if (asked.note) lines.push(`Note: ${asked.note}.`);
  }
  const pipelineOptions = { product: options.product, server, audience };
  const text = provider === 'github' ? githubWorkflow(build, pipelineOptions) : gitlabPipeline(build, pipelineOptions, asInclude);
  writeFile(file, text);
  lines.push(`Wrote ${relative}${asInclude ? ` (an include: ${GITLAB_CI_PATH} exists)` : ''}.`, '', 'Next steps:');

  const origin = originUrl(root);
  const repo = origin ? repositoryPath(origin) : null;
  lines.push(...nextSteps({ provider, product: options.product, file: relative, repository: repo?.path ?? null, host: repo?.host ?? null, server, build, asInclude }));
  return { file, text, lines };
}

export function registerCiCommands(program: Command): void {
  const ci = program.command('ci').description('CI pipelines that publish to Pier');
  ci.command('init')
    .description('write a CI pipeline that builds the update site and publishes it with trusted publishing')
    .option('--github', 'GitHub Actions: .github/workflows/pier-publish.yml')
    .option('--gitlab', 'GitLab CI: .gitlab-ci.yml (or pier-publish.gitlab-ci.yml to include when one exists)')
    .requiredOption('--product <id>', 'the product ID')
    .option('--server <url>', 'the service base URL (default: a PIER_SERVER CI variable)')
    .option('--audience <aud>', 'the OIDC audience (GitLab; default: what the server announces, else --server)')
    .option('--dir <path>', 'the repository root', '.')
    .option('--build <kind>', 'tycho or python, when the repository has both')
    .option('--module <dir>', 'the eclipse-repository module or knime.yml folder, when there are several')
    .option('--force', 'replace an existing pipeline file')
    .action(async (opts: CiInitOptions) => {
      const result = await ciInit(opts);
      process.stdout.write(`${result.lines.join('\n')}\n`);
    });
  ci.command('label')
    .description('print the label of this CI run: PIER_LABEL, else from the tag or branch (v5.3.1 → 5.3)')
    .option('--ref <ref>', 'the tag or branch (default: GITHUB_REF_NAME, CI_COMMIT_TAG, CI_COMMIT_REF_NAME)')
    .action((opts: { ref?: string }) => {
      try {
        process.stdout.write(`${labelFromEnv(process.env, opts.ref)}\n`);
      } catch (err) {
        if (!(err instanceof NoLabelError)) throw err;
        process.stderr.write(`pier ci label: ${err.message}\n`);
        process.exitCode = 2;
      }
    });
}
