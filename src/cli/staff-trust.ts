/** `pier staff trust …`: which CI identities may publish a product without stored secrets. */
import type { Command } from 'commander';
import { UsageError } from '../infra/errors.js';
import type { BindingInput, BindingView, TrustService } from '../publishing/trust/service.js';

function print(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

/** One binding on one line: what a CI identity must be to publish. */
export function bindingLine(b: BindingView): string {
  const owner = b.ownerId ? `${b.provider === 'github' ? 'owner' : 'namespace'} ${b.ownerId}${b.ownerPinnedAt ? ' (pinned at first use)' : ''}` : `${b.provider === 'github' ? 'owner' : 'namespace'} pinned at first use`;
  const ref = b.ref === null ? [] : b.ref.startsWith('refs/tags/') ? [`tag ${b.ref.slice('refs/tags/'.length)}`] : [`branch ${b.ref.slice('refs/heads/'.length)}`];
  return [
    b.id,
    b.provider,
    `${b.repository} (${b.provider === 'github' ? 'repository' : 'project'} ${b.repositoryId})`,
    owner,
    ...(b.workflow ? [`workflow ${b.workflow}`] : []),
    ...ref,
    ...(b.provider === 'gitlab' ? [b.allowUnprotected ? 'unprotected refs allowed' : 'protected refs only'] : []),
    b.environment ? `environment ${b.environment}` : 'any environment',
  ].join('  ');
}

export function registerTrustCommands(staff: Command, withTrust: <T>(action: (trust: TrustService) => Promise<T>) => Promise<T>): void {
  const trust = staff.command('trust').description('trusted publishing: which CI identities may publish a product without stored secrets');

  trust
    .command('add <product-id>')
    .description('bind a product to a GitHub Actions workflow or a GitLab CI project')
    .option('--github <owner/repo>', 'GitHub repository')
    .option('--repository-id <n>', 'GitHub repository id (stable across renames; `gh api repos/<owner>/<repo> --jq .id`)')
    .option('--owner-id <n>', 'GitHub owner id (`.owner.id`); pinned at the first publish when not given')
    .option('--workflow <path>', 'GitHub workflow file, e.g. .github/workflows/release.yml')
    .option('--gitlab <group/project>', 'GitLab project path')
    .option('--project-id <n>', 'GitLab project id')
    .option('--namespace-id <n>', 'GitLab namespace (group) id; pinned at the first publish when not given')
    .option('--ref <branch>', 'the branch the job must run for (refs/heads/<branch>; refs/tags/<tag> for a tag); * matches any characters (any ref when neither --ref nor --tag)')
    .option('--tag <tag>', 'the tag the job must run for, e.g. v* (the same as --ref refs/tags/<tag>)')
    .option('--allow-unprotected', 'GitLab only: also accept pipelines of unprotected branches and tags (refused by default)')
    .option('--environment <name>', 'the CI environment the job must run in (any when not given)')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        opts: {
          github?: string;
          repositoryId?: string;
          ownerId?: string;
          workflow?: string;
          gitlab?: string;
          projectId?: string;
          namespaceId?: string;
          ref?: string;
          tag?: string;
          allowUnprotected?: boolean;
          environment?: string;
          json?: boolean;
        },
      ) => {
        const input = bindingInput(opts);
        const b = await withTrust((t) => t.addBinding(id, input));
        print(!!opts.json, b, () => `Bound "${id}": ${bindingLine(b)}`);
      },
    );

  trust
    .command('list <product-id>')
    .description("list a product's trusted-publishing bindings")
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const list = await withTrust((t) => t.listBindings(id));
      print(!!opts.json, list, () =>
        list.length === 0 ? `Product "${id}" has no trusted-publishing bindings. Add one with: pier staff trust add ${id} --github <owner>/<repo> …` : list.map(bindingLine).join('\n'),
      );
    });

  trust
    .command('remove <product-id> <binding-id>')
    .description('remove a binding: its credentials stop working at once, its SFTP sessions end within seconds')
    .option('--json', 'print JSON')
    .action(async (id: string, bindingId: string, opts: { json?: boolean }) => {
      await withTrust((t) => t.removeBinding(id, bindingId));
      print(!!opts.json, { productId: id, removed: bindingId }, () => `Removed binding ${bindingId} of "${id}".`);
    });
}

/** `--ref` and `--tag` as one bound ref: a bare `--ref` is a branch, `--tag x` is `refs/tags/x`. */
function refOption(ref: string | undefined, tag: string | undefined): string | undefined {
  if (ref !== undefined && tag !== undefined) throw new UsageError('give one of --ref <branch> or --tag <tag>');
  if (tag === undefined) return ref;
  if (tag.startsWith('refs/')) throw new UsageError('--tag takes a tag name, e.g. v* or v1.2.0 (or use --ref refs/tags/<tag>)');
  return `refs/tags/${tag}`;
}

/** The options of `trust add` as one provider's binding; GitHub and GitLab options do not mix. */
function bindingInput(opts: Record<string, string | boolean | undefined>): BindingInput {
  const str = (k: string) => (typeof opts[k] === 'string' ? (opts[k] as string) : undefined);
  const github = str('github');
  const gitlab = str('gitlab');
  if ((github === undefined) === (gitlab === undefined)) throw new UsageError('give exactly one of --github <owner>/<repo> or --gitlab <group>/<project>');
  const misplaced = (names: [string, string][]) => names.filter(([k]) => opts[k] !== undefined).map(([, flag]) => flag);
  const ref = refOption(str('ref'), str('tag'));
  if (github !== undefined) {
    const wrong = misplaced([['projectId', '--project-id'], ['namespaceId', '--namespace-id'], ['allowUnprotected', '--allow-unprotected']]);
    if (wrong.length) throw new UsageError(`${wrong.join(', ')} ${wrong.length === 1 ? 'is' : 'are'} for --gitlab bindings`);
    const repositoryId = str('repositoryId');
    const workflow = str('workflow');
    if (repositoryId === undefined) throw new UsageError('--repository-id <n> is required with --github (the stable id: a recreated repository gets a new one)');
    if (workflow === undefined) throw new UsageError('--workflow <path> is required with --github, e.g. .github/workflows/release.yml');
    return {
      provider: 'github',
      repository: github,
      repositoryId,
      ownerId: str('ownerId'),
      // A bare file name means the workflows folder, the only place GitHub runs workflows from.
      workflow: workflow.includes('/') ? workflow.replace(/^\.?\//, '') : `.github/workflows/${workflow}`,
      ref,
      environment: str('environment'),
    };
  }
  const wrong = misplaced([['repositoryId', '--repository-id'], ['ownerId', '--owner-id'], ['workflow', '--workflow']]);
  if (wrong.length) throw new UsageError(`${wrong.join(', ')} ${wrong.length === 1 ? 'is' : 'are'} for --github bindings`);
  const projectId = str('projectId');
  if (projectId === undefined) throw new UsageError('--project-id <n> is required with --gitlab (the stable id: a recreated project gets a new one)');
  return {
    provider: 'gitlab',
    repository: gitlab!,
    repositoryId: projectId,
    ownerId: str('namespaceId'),
    ref,
    environment: str('environment'),
    allowUnprotected: opts.allowUnprotected === true,
  };
}
