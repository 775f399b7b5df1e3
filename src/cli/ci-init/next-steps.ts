/**
 * What `pier ci init` prints after writing the pipeline: the exact staff command that binds the
 * product to this repository's workflow (ids left as placeholders, with how to look them up),
 * the variables to set, and how to try it.
 */
import type { Build } from './detect.js';

export interface NextStepsInput {
  provider: 'github' | 'gitlab';
  product: string;
  file: string;
  /** `owner/repo` or `group/project` from the origin remote; null when unknown. */
  repository: string | null;
  host: string | null;
  server: string | null;
  build: Build;
  /** The file is an include the existing .gitlab-ci.yml must pull in. */
  asInclude: boolean;
}

export function buildSummary(build: Build): string {
  if (build.kind === 'tycho') {
    return `Maven Tycho build: \`${build.command}\`, site ${build.site}, archive ${build.module ? `${build.module}/` : ''}target/${build.archiveName ?? '*.zip'}`;
  }
  const how = build.runner === 'pixi' ? 'the pixi task `build`' : 'build_python_extension.py (knime-extension-bundling)';
  return `pure-Python extension (knime.yml in ${build.extension}) bundled by ${how} into ${build.site}, archive ${build.archive}`;
}

export function nextSteps(input: NextStepsInput): string[] {
  const { provider, product, repository } = input;
  const lines: string[] = [];
  const step = (text: string, ...more: string[]) => lines.push(`${lines.filter((l) => /^\d+\. /.test(l)).length + 1}. ${text}`, ...more.map((m) => `   ${m}`));
  if (provider === 'github') {
    const repo = repository ?? '<owner>/<repo>';
    step(
      'Ask the service staff to trust this workflow (they run, with the ids filled in):',
      `pier staff trust add ${product} --github ${repo} --repository-id <repository id> --workflow ${input.file}`,
      `The repository id: \`gh api repos/${repo} --jq .id\` (or https://api.github.com/repos/${repo}, field "id").`,
    );
    step(
      'Set repository variables (Settings → Secrets and variables → Actions → Variables):',
      'PIER_CLI_PACKAGE  (optional) install the pier CLI with `npm install --global` from this instead of the service\'s /cli/pier.mjs',
      ...(input.server ? [] : ['PIER_SERVER       the service base URL']),
      'PIER_LABEL        (optional) a fixed label instead of the one taken from the tag',
    );
    step(
      'Commit and push the workflow, then try it: Actions → "Publish to Pier" → Run workflow with a test label,',
      'or push a release tag: git tag v5.3.0 && git push origin v5.3.0 (publishes label 5.3).',
    );
  } else {
    const repo = repository ?? '<group>/<project>';
    step(
      'Ask the service staff to trust this project (they run, with the id filled in):',
      `pier staff trust add ${product} --gitlab ${repo} --project-id <project id>`,
      `The project id is on the project's overview page (⋮ → Copy project ID), or: curl ${input.host && input.host !== 'gitlab.com' ? `https://${input.host}` : 'https://gitlab.com'}/api/v4/projects/${encodeURIComponent(repo)} (field "id").`,
    );
    step(
      'Set CI/CD variables (Settings → CI/CD → Variables):',
      'PIER_CLI_PACKAGE  (optional) install the pier CLI with `npm install --global` from this instead of the service\'s /cli/pier.mjs',
      ...(input.server ? [] : ['PIER_SERVER       the service base URL (the ID token audience uses it too; GitLab 16.1 or later)']),
      'PIER_LABEL        (optional) a fixed label instead of the one taken from the tag',
    );
    step(
      'Protect the release tags: Settings → Repository → Protected tags → v* (the default branch is protected already).',
      'The service refuses ID tokens of pipelines on unprotected branches and tags, unless staff allow them for this binding.',
    );
    if (input.asInclude) step(`Add to .gitlab-ci.yml:  include: [{ local: ${input.file} }]`);
    step(
      'Commit and push, then try it: Build → Pipelines → Run pipeline (set PIER_LABEL to a test label),',
      'or push a release tag: git tag v5.3.0 && git push origin v5.3.0 (publishes label 5.3).',
    );
  }
  step(
    'To check the build output before any CI run, build locally and run (with PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD set):',
    `pier publish --dry-run --server ${input.server ?? '<server>'} --product ${product} --label test --site ${input.build.site}`,
  );
  return lines;
}
