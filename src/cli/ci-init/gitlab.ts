/**
 * The GitLab CI jobs `pier ci init --gitlab` writes: `pier-build` builds the update site in an
 * image with the build's toolchain and hands it on as job artifacts; `pier-publish` installs the
 * pier CLI in a Node.js image and publishes with the job's ID token (`id_tokens:`, trusted
 * publishing). Both run for `v*` tags and for pipelines started by hand ("Run pipeline").
 */
import type { Build } from './detect.js';
import { type PipelineOptions, q } from './github.js';
import { installLines, publishLines, pythonBuildLines } from './scripts.js';

export const GITLAB_CI_PATH = '.gitlab-ci.yml';
/** Written instead when the project already has a .gitlab-ci.yml, for it to `include:`. */
export const GITLAB_INCLUDE_PATH = 'pier-publish.gitlab-ci.yml';

/** GitLab runs `script:` entries in one shell; a multi-line entry is a literal block. */
function script(key: string, lines: string[], indent: string): string[] {
  return [`${indent}${key}:`, `${indent}  - |`, ...lines.map((l) => `${indent}    ${l}`)];
}

const RULES = ['  rules:', '    - if: $CI_COMMIT_TAG =~ /^v/', '    - if: $CI_PIPELINE_SOURCE == "web"'];

function buildJob(build: Build): string[] {
  // Artifacts take paths relative to the project, with GitLab's own globbing.
  const paths = [`    - ${q(build.site)}`, `    - ${q(build.kind === 'tycho' ? build.archiveGlob : build.archive)}`];
  if (build.kind === 'tycho') {
    return [
      'pier-build:',
      '  stage: build',
      `  image: maven:3.9-eclipse-temurin-${build.javaVersion}`,
      ...RULES,
      '  variables:',
      '    MAVEN_OPTS: "-Dmaven.repo.local=$CI_PROJECT_DIR/.m2/repository"',
      '  cache:',
      '    key: pier-maven',
      '    paths: [.m2/repository]',
      ...script('script', [build.command.replace(/^\.\/mvnw/, 'sh ./mvnw')], '  '),
      '  artifacts:',
      '    expire_in: 1 day',
      '    paths:',
      ...paths,
    ];
  }
  if (build.runner === 'pixi') {
    return [
      'pier-build:',
      '  stage: build',
      '  image: ghcr.io/prefix-dev/pixi:latest',
      ...RULES,
      // The pixi image has no Python of its own: `pixi exec` runs one for the zip.
      ...script('script', pythonBuildLines(build, 'pixi exec python'), '  '),
      '  artifacts:',
      '    expire_in: 1 day',
      '    paths:',
      ...paths,
    ];
  }
  return [
    'pier-build:',
    '  stage: build',
    '  image: mambaorg/micromamba:2',
    ...RULES,
    ...script(
      'script',
      [
        'micromamba install --yes --name base --channel knime --channel conda-forge knime-extension-bundling',
        ...pythonBuildLines(build, 'micromamba run --name base python', 'micromamba run --name base '),
      ],
      '  ',
    ),
    '  artifacts:',
    '    expire_in: 1 day',
    '    paths:',
    ...paths,
  ];
}

export function gitlabPipeline(build: Build, options: PipelineOptions, asInclude: boolean): string {
  // GitLab expands variables in id_tokens:aud since 16.1; a literal works everywhere.
  const audience = options.audience ?? options.server ?? '$PIER_SERVER';
  return [
    '# Publishes the update site to Pier for every release tag (v*) and for pipelines run by hand,',
    '# with no stored secret: Pier trusts the job\'s GitLab ID token (trusted publishing).',
    `# Written by \`pier ci init --gitlab --product ${options.product}\`; see "Publishing from CI" in Pier's vendor guide.`,
    ...(asInclude ? ['# Include it from .gitlab-ci.yml:  include: [{ local: pier-publish.gitlab-ci.yml }]', '# (its stages must include build and deploy; the defaults do).'] : []),
    '#',
    '# The label: the CI/CD variable PIER_LABEL (a project variable, or set in "Run pipeline"), else',
    '# the tag or branch: v5.3.1 -> 5.3 (one label per platform release), v5.3.0-rc.1 -> 5.3.0-rc.1.',
    '',
    ...buildJob(build),
    '',
    'pier-publish:',
    '  stage: deploy',
    '  image: node:22',
    '  needs: [pier-build]',
    ...RULES,
    '  # One publish at a time: a second waits instead of racing the first upload.',
    '  resource_group: pier-publish',
    '  # GitLab puts an OIDC ID token for Pier in $PIER_ID_TOKEN; pier publish exchanges it.',
    '  id_tokens:',
    '    PIER_ID_TOKEN:',
    `      aud: ${q(audience)}`,
    '  variables:',
    // Without --server, the project's CI/CD variable PIER_SERVER holds it.
    ...(options.server ? [`    PIER_SERVER: ${q(options.server)}`] : []),
    `    PIER_PRODUCT: ${q(options.product)}`,
    '  # PIER_CLI_PACKAGE (optional: install pier from it, not from the service) and, only without trusted publishing, PIER_EDIT_TOKEN and',
    '  # PIER_SFTP_PASSWORD come from the project\'s CI/CD variables.',
    ...script('script', [...installLines(), ...publishLines(build)], '  '),
    '',
  ].join('\n');
}
