/**
 * What a binding is (`pier staff trust add`), how it is checked when staff add it, and which
 * claims of an ID token it refuses at an exchange.
 */
import type { FieldProblem } from '../../infra/errors.js';
import { type CiIdentity, isWorkflowPath } from './claims.js';
import { boundRef, identityRef, refMatches, refProblem, TAG_PREFIX } from './refs.js';
import type { BindingRow } from './repository.js';

export interface BindingInput {
  provider: 'github' | 'gitlab';
  repository: string;
  repositoryId: string;
  ownerId?: string | undefined;
  workflow?: string | undefined;
  /** A bare branch name, `refs/heads/<branch>` or `refs/tags/<tag>` (trust/refs.ts); any ref when absent. */
  ref?: string | undefined;
  environment?: string | undefined;
  /** GitLab: also accept pipelines of unprotected branches and tags (`ref_protected` false). */
  allowUnprotected?: boolean | undefined;
}

export interface BindingView {
  id: string;
  productId: string;
  provider: 'github' | 'gitlab';
  repository: string;
  repositoryId: string;
  /** null: pinned by the first successful exchange. */
  ownerId: string | null;
  ownerPinnedAt: string | null;
  workflow: string | null;
  /** The full ref accepted (`refs/heads/…` or `refs/tags/…`), null for any. */
  ref: string | null;
  environment: string | null;
  /** GitLab: whether pipelines of unprotected refs are accepted too (never by default). */
  allowUnprotected: boolean;
  createdAt: string;
}

/** The claim names of each provider, for refusals. */
export const CLAIMS = {
  github: { repository: 'repository', repositoryId: 'repository_id', ownerId: 'repository_owner_id', workflow: 'workflow_ref', ref: 'ref' },
  gitlab: { repository: 'project_path', repositoryId: 'project_id', ownerId: 'namespace_id', workflow: 'ci_config_ref_uri', ref: 'ref' },
} as const;

/**
 * Which claims of `identity` the binding refuses, in the order a refusal names them. Stable ids
 * are checked as well as names: a repository deleted and recreated under the same name gets a
 * new id and does not inherit the binding. GitHub and GitLab paths are case-insensitive, so are
 * GitHub environment names; ids, refs and workflow paths are exact.
 */
export function bindingMismatches(binding: BindingRow, identity: CiIdentity): FieldProblem[] {
  const claims = CLAIMS[identity.provider];
  const out: FieldProblem[] = [];
  if (binding.provider !== identity.provider) return [{ field: 'iss', message: `the binding is for ${binding.provider}` }];
  if (binding.repository_id !== identity.repositoryId) out.push({ field: claims.repositoryId, message: `"${claims.repositoryId}" is not the bound repository's id` });
  if (binding.repository.toLowerCase() !== identity.repository.toLowerCase()) {
    out.push({ field: claims.repository, message: `"${claims.repository}" is not the bound repository` });
  }
  if (binding.owner_id !== null && binding.owner_id !== identity.ownerId) {
    out.push({ field: claims.ownerId, message: `"${claims.ownerId}" is not the bound owner's id` });
  }
  if (binding.workflow !== null && binding.workflow !== identity.workflow) {
    out.push({ field: claims.workflow, message: `"${claims.workflow}" does not name the bound workflow file` });
  }
  if (binding.ref !== null) {
    const problem = refMismatch(boundRef(binding.ref), identity);
    if (problem) out.push(problem);
  }
  // GitLab hands ID tokens to every pipeline, also one a developer runs on a branch or tag they
  // just pushed; only protected refs are limited to the maintainers GitLab names (GitLab docs,
  // "Protected branches" / "Protected tags"). So a pipeline of an unprotected ref is refused
  // unless staff allowed it for this binding.
  if (identity.provider === 'gitlab' && !binding.allow_unprotected && identity.refProtected !== true) {
    out.push({
      field: 'ref_protected',
      message:
        identity.refProtected === false
          ? '"ref_protected" is false: the pipeline runs for an unprotected branch or tag; protect it in GitLab (or staff allow unprotected refs for this binding)'
          : 'the ID token has no "ref_protected" claim; the binding accepts protected branches and tags only',
    });
  }
  if (binding.environment !== null) {
    const env = identity.environment;
    const same = env !== null && (identity.provider === 'github' ? env.toLowerCase() === binding.environment.toLowerCase() : env === binding.environment);
    if (!same) out.push({ field: 'environment', message: env === null ? 'the job runs in no environment; the binding requires one' : '"environment" is not the bound environment' });
  }
  return out;
}

/** The refusal of a job whose ref is not the bound one; a branch and a tag of one name differ. */
function refMismatch(bound: string, identity: CiIdentity): FieldProblem | null {
  const actual = identityRef(identity);
  if (actual !== null && refMatches(bound, actual)) return null;
  const kind = bound.startsWith(TAG_PREFIX) ? 'tag' : 'branch';
  if (identity.provider === 'gitlab' && actual === null) {
    return { field: 'ref_type', message: `"ref_type" is neither branch nor tag; the binding accepts the ${kind} ${bound}` };
  }
  const otherKind = actual !== null && (actual.startsWith(TAG_PREFIX) ? 'tag' : 'branch') !== kind;
  if (identity.provider === 'gitlab' && otherKind) {
    return { field: 'ref_type', message: `"ref_type" is ${identity.refType}; the binding accepts the ${kind} ${bound}` };
  }
  return { field: 'ref', message: `"ref" is not the bound ${kind} (${bound})` };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we refuse
const PLAIN = /^[^\x00-\x1f\x7f]{1,255}$/;

/** What is wrong with a binding staff give, each problem naming the option. */
export function checkBinding(input: BindingInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const id = (field: string, v: string | undefined) => {
    if (v !== undefined && !/^\d{1,30}$/.test(v)) problems.push({ field, message: 'must be a numeric id' });
  };
  if (input.provider === 'github') {
    if (!/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/.test(input.repository)) {
      problems.push({ field: 'github', message: 'must be <owner>/<repository>' });
    }
    id('repository-id', input.repositoryId);
    id('owner-id', input.ownerId);
    if (!input.workflow || !isWorkflowPath(input.workflow)) problems.push({ field: 'workflow', message: 'must be a workflow file, e.g. .github/workflows/release.yml' });
    if (input.allowUnprotected) problems.push({ field: 'allow-unprotected', message: 'is for GitLab bindings (on GitHub, protect the job with an environment)' });
  } else {
    if (!/^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)+$/.test(input.repository) || input.repository.length > 512) {
      problems.push({ field: 'gitlab', message: 'must be <group>/<project> (subgroups allowed)' });
    }
    id('project-id', input.repositoryId);
    id('namespace-id', input.ownerId);
    if (input.workflow !== undefined) problems.push({ field: 'workflow', message: 'is for GitHub bindings' });
  }
  if (input.ref !== undefined) {
    const problem = refProblem(input.ref);
    if (problem) problems.push({ field: 'ref', message: problem });
  }
  if (input.environment !== undefined && !PLAIN.test(input.environment)) problems.push({ field: 'environment', message: 'must be 1 to 255 characters' });
  return problems;
}

export function bindingView(row: BindingRow): BindingView {
  return {
    id: row.id,
    productId: row.product_id,
    provider: row.provider,
    repository: row.repository,
    repositoryId: row.repository_id,
    ownerId: row.owner_id,
    ownerPinnedAt: row.owner_pinned_at,
    workflow: row.workflow,
    ref: row.ref === null ? null : boundRef(row.ref),
    environment: row.environment,
    allowUnprotected: !!row.allow_unprotected,
    createdAt: row.created_at,
  };
}
