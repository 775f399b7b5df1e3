import type { JWTPayload } from 'jose';

/** What an ID token says about the CI job, in one shape for both providers. */
export interface CiIdentity {
  provider: 'github' | 'gitlab';
  repository: string;
  repositoryId: string;
  ownerId: string;
  /** GitHub: the workflow path; GitLab: the CI config path ('' when the token has none). */
  workflow: string;
  environment: string | null;
  ref: string;
  /** GitLab: 'branch' | 'tag'; GitHub: from the token's `ref_type`. */
  refType: string | null;
  /** The token's `ref_protected`: whether the branch or tag is protected in the CI's project; null when absent. */
  refProtected: boolean | null;
  runId: string;
  runAttempt: string | null;
  sha: string | null;
  jobId: string | null;
  runUrl: string | null;
}

/** A claim the ID token lacks or carries in a form we cannot use: refused naming it. */
export class ClaimProblem extends Error {
  constructor(
    readonly claim: string,
    message: string,
  ) {
    super(message);
    this.name = 'ClaimProblem';
  }
}

/** Ids travel as strings in both providers' tokens; a number is accepted if it is a safe whole number. */
function idClaim(payload: JWTPayload, name: string, required: true): string;
function idClaim(payload: JWTPayload, name: string, required: false): string | null;
function idClaim(payload: JWTPayload, name: string, required: boolean): string | null {
  const v = payload[name];
  if (v === undefined || v === null || v === '') {
    if (required) throw new ClaimProblem(name, `the ID token has no "${name}" claim`);
    return null;
  }
  const s = typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? String(v) : v;
  if (typeof s !== 'string' || !/^\d{1,30}$/.test(s)) throw new ClaimProblem(name, `"${name}" is not a numeric id`);
  return s;
}

function textClaim(payload: JWTPayload, name: string, required: true): string;
function textClaim(payload: JWTPayload, name: string, required: false): string | null;
function textClaim(payload: JWTPayload, name: string, required: boolean): string | null {
  const v = payload[name];
  if (v === undefined || v === null || v === '') {
    if (required) throw new ClaimProblem(name, `the ID token has no "${name}" claim`);
    return null;
  }
  // Bounded and printable: these end up in the history and in `pier staff show`.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  if (typeof v !== 'string' || v.length > 512 || /[\x00-\x1f\x7f]/.test(v)) throw new ClaimProblem(name, `"${name}" is not a plain string`);
  return v;
}

/**
 * `ref_protected`: the string "true"/"false" in both providers' tokens (a JSON boolean is read
 * alike). Anything else is unknown (null), which the protected-ref rule treats as unprotected.
 */
function flagClaim(payload: JWTPayload, name: string): boolean | null {
  const v = payload[name];
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  return null;
}

/**
 * The workflow file of GitHub's `workflow_ref`: `<owner>/<repo>/<path>@<ref>`. The path is what
 * follows the repository up to `@<ref>` (the token's `ref` claim); when the ref does not close it
 * (a pull request's merge ref differs), up to the first `@` after a `.yml`/`.yaml` name, since a
 * workflow file must have one of those extensions. `job_workflow_ref` is never used: for a
 * reusable workflow it names the called workflow, not the caller's that staff bound.
 */
export function workflowPath(workflowRef: string, repository: string, ref: string | null): string | null {
  const prefix = `${repository}/`;
  if (workflowRef.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) return null;
  const rest = workflowRef.slice(prefix.length);
  if (ref && rest.endsWith(`@${ref}`)) {
    const path = rest.slice(0, -(ref.length + 1));
    if (/\.ya?ml$/.test(path)) return path;
  }
  const m = /^(.+?\.ya?ml)@/.exec(rest);
  return m?.[1] ?? null;
}

/** `.github/workflows/<file>.yml`: GitHub runs workflows only from that folder, never a subfolder. */
export function isWorkflowPath(path: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
  return /^\.github\/workflows\/[^/\x00-\x1f]+\.ya?ml$/.test(path) && path.length <= 512;
}

/**
 * GitHub Actions' ID token claims
 * (docs.github.com "About security hardening with OpenID Connect", "Understanding the OIDC token").
 */
export function githubIdentity(payload: JWTPayload, issuer: string): CiIdentity {
  const repository = textClaim(payload, 'repository', true);
  const ref = textClaim(payload, 'ref', true);
  const workflowRef = textClaim(payload, 'workflow_ref', true);
  const workflow = workflowPath(workflowRef, repository, ref);
  if (!workflow) throw new ClaimProblem('workflow_ref', '"workflow_ref" does not name a workflow file of the token\'s repository');
  const runId = idClaim(payload, 'run_id', true);
  const runAttempt = idClaim(payload, 'run_attempt', false);
  return {
    provider: 'github',
    repository,
    repositoryId: idClaim(payload, 'repository_id', true),
    ownerId: idClaim(payload, 'repository_owner_id', true),
    workflow,
    environment: textClaim(payload, 'environment', false),
    ref,
    refType: textClaim(payload, 'ref_type', false),
    refProtected: flagClaim(payload, 'ref_protected'),
    runId,
    runAttempt,
    sha: textClaim(payload, 'sha', false),
    jobId: null,
    runUrl: `${githubServer(issuer)}/${repository}/actions/runs/${runId}${runAttempt ? `/attempts/${runAttempt}` : ''}`,
  };
}

/** github.com's tokens come from token.actions.githubusercontent.com; GHES's from https://<host>/_services/token. */
function githubServer(issuer: string): string {
  if (issuer === 'https://token.actions.githubusercontent.com') return 'https://github.com';
  return issuer.replace(/\/_services\/token$/, '');
}

/** GitLab CI's ID token claims (docs.gitlab.com "ID token authentication"). */
export function gitlabIdentity(payload: JWTPayload, issuer: string): CiIdentity {
  const repository = textClaim(payload, 'project_path', true);
  const jobId = idClaim(payload, 'job_id', false);
  // `ci_config_ref_uri`: `<host>/<project>//<config path>@<ref>`; the config path is informative.
  const configUri = textClaim(payload, 'ci_config_ref_uri', false);
  const workflow = configUri ? (/\/\/(.+?\.ya?ml)@/.exec(configUri)?.[1] ?? '') : '';
  return {
    provider: 'gitlab',
    repository,
    repositoryId: idClaim(payload, 'project_id', true),
    ownerId: idClaim(payload, 'namespace_id', true),
    workflow,
    environment: textClaim(payload, 'environment', false),
    ref: textClaim(payload, 'ref', true),
    refType: textClaim(payload, 'ref_type', false),
    refProtected: flagClaim(payload, 'ref_protected'),
    runId: idClaim(payload, 'pipeline_id', true),
    runAttempt: null,
    sha: textClaim(payload, 'sha', false),
    jobId,
    runUrl: jobId ? `${issuer}/${repository}/-/jobs/${jobId}` : null,
  };
}
