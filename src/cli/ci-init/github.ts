/**
 * The GitHub Actions workflow `pier ci init --github` writes: on a `v*` tag (and by hand), three
 * jobs. `label` takes the label from the tag (so runs of one label queue behind each other),
 * `build` builds the update site and hands it on as an artifact, `publish` takes the artifact
 * and publishes it with trusted publishing. Only `publish` has `id-token: write` (it may ask
 * GitHub for an OIDC ID token, which `pier publish` exchanges at the server's /api/oidc/token):
 * the build runs the project's Maven plugins, tests and bundler, third-party code that must not
 * be able to mint a Pier credential (GitHub's "Security hardening for GitHub Actions": grant
 * `id-token: write` only to the job that needs it). Every action is pinned by commit (actions.ts).
 */
import path from 'node:path';
import { ACTIONS, uses } from './actions.js';
import type { Build } from './detect.js';
import { installLines, publishLines, pythonBuildLines } from './scripts.js';

export const GITHUB_WORKFLOW_PATH = '.github/workflows/pier-publish.yml';

export interface PipelineOptions {
  product: string;
  /** The server's base URL; null: a repository / project variable PIER_SERVER holds it. */
  server: string | null;
  /** The audience the CI ID token must carry (GitLab declares it in the pipeline). */
  audience: string | null;
}

/** A YAML double-quoted scalar (JSON's string syntax is a subset of it). */
export function q(s: string): string {
  return JSON.stringify(s);
}

/** A `run: |` block, indented under a step. */
function run(lines: string[], indent: string): string[] {
  return [`${indent}run: |`, ...lines.map((l) => `${indent}  ${l}`)];
}

/** The steps that set up the toolchain and build the update site (the step with id `build`). */
function buildSteps(build: Build): string[] {
  const s = '      ';
  if (build.kind === 'tycho') {
    return [
      `${s}- name: Set up Java`,
      `${s}  uses: ${uses(ACTIONS.setupJava)}`,
      `${s}  with:`,
      `${s}    distribution: temurin`,
      `${s}    java-version: ${q(build.javaVersion)}`,
      `${s}    cache: maven`,
      `${s}- name: Build the update site`,
      `${s}  id: build`,
      ...run([build.command], `${s}  `),
    ];
  }
  if (build.runner === 'pixi') {
    return [
      `${s}- name: Set up pixi`,
      `${s}  uses: ${uses(ACTIONS.setupPixi)}`,
      `${s}- name: Build the update site`,
      `${s}  id: build`,
      `${s}  # The pixi task runs the platform's build_python_extension.py (knime-extension-bundling).`,
      ...run(pythonBuildLines(build, 'python3'), `${s}  `),
    ];
  }
  return [
    `${s}- name: Set up the bundling environment`,
    `${s}  uses: ${uses(ACTIONS.setupMicromamba)}`,
    `${s}  with:`,
    `${s}    environment-name: knime-ext-bundling`,
    `${s}    create-args: --channel knime --channel conda-forge knime-extension-bundling`,
    `${s}- name: Build the update site`,
    `${s}  id: build`,
    `${s}  # A login shell activates the micromamba environment (setup-micromamba's documented way).`,
    `${s}  shell: bash -el {0}`,
    ...run(pythonBuildLines(build, 'python'), `${s}  `),
  ];
}

/** The folder holding the site and its archive: the artifact's root (upload-artifact keeps paths below the common folder of its paths). */
export function artifactRoot(build: Build): string {
  return path.posix.dirname(build.site);
}

/**
 * Node.js for pier, without setup-node's dependency cache: nothing another run stored is
 * restored into a job (GitHub's advice against cache poisoning of privileged jobs).
 */
function nodeStep(): string[] {
  const s = '      ';
  return [`${s}- name: Set up Node.js`, `${s}  uses: ${uses(ACTIONS.setupNode)}`, `${s}  with:`, `${s}    node-version: '22'`, `${s}    package-manager-cache: false`];
}

export function githubWorkflow(build: Build, options: PipelineOptions): string {
  const s = '      ';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JavaScript template
  const server = options.server ? q(options.server) : '${{ vars.PIER_SERVER }}';
  const archive = build.kind === 'tycho' ? build.archiveGlob : build.archive;
  return [
    '# Publishes the update site to Pier on release tags (v*) and manual runs, with no stored',
    '# secret (trusted publishing). Label: the "label" input, else the variable PIER_LABEL, else',
    `# the tag (v5.3.1 -> 5.3). Written by \`pier ci init\`; see "Publishing from CI" in Pier's docs.`,
    'name: Publish to Pier',
    '',
    'on:',
    '  push:',
    "    tags: ['v*']",
    '  workflow_dispatch:',
    '    inputs:',
    '      label:',
    '        description: Label to publish (empty = from the tag or branch)',
    '        type: string',
    '        required: false',
    '',
    'permissions: {} # each job names what it needs',
    '',
    'defaults:',
    '  run:',
    '    shell: bash',
    '',
    'jobs:',
    '  label:',
    '    name: Choose the label',
    '    runs-on: ubuntu-latest',
    '    permissions: {}',
    '    outputs:',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JavaScript template
    '      label: ${{ steps.label.outputs.label }}',
    '    env:',
    `      PIER_SERVER: ${server}`,
    '    steps:',
    ...nodeStep(),
    `${s}- name: Take the label from the tag or branch`,
    `${s}  id: label`,
    `${s}  env:`,
    `${s}    PIER_LABEL: \${{ inputs.label || vars.PIER_LABEL }}`,
    ...run(['curl -fsSL --retry 3 "$PIER_SERVER/cli/pier.mjs" -o "$RUNNER_TEMP/pier.mjs"', 'label="$(node "$RUNNER_TEMP/pier.mjs" ci label)"', 'echo "label=$label" >> "$GITHUB_OUTPUT"'], `${s}  `),
    '',
    '  build:',
    '    name: Build the update site',
    '    needs: label',
    '    runs-on: ubuntu-latest',
    '    permissions:',
    '      contents: read',
    '    steps:',
    `${s}- name: Check out`,
    `${s}  uses: ${uses(ACTIONS.checkout)}`,
    `${s}  with:`,
    `${s}    persist-credentials: false`,
    ...buildSteps(build),
    `${s}- name: Hand the update site to the publish job`,
    `${s}  uses: ${uses(ACTIONS.uploadArtifact)}`,
    `${s}  with:`,
    `${s}    name: pier-update-site`,
    `${s}    path: |`,
    `${s}      ${build.site}`,
    `${s}      ${archive}`,
    `${s}    if-no-files-found: error`,
    `${s}    retention-days: 1`,
    '',
    '  publish:',
    '    name: Publish to Pier',
    '    needs: [label, build]',
    '    runs-on: ubuntu-latest',
    '    permissions:',
    '      id-token: write # trusted publishing: only this job may ask GitHub for an OIDC ID token',
    '    # One publish per label at a time: a second waits instead of racing the first upload.',
    '    concurrency:',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JavaScript template
    '      group: pier-publish-${{ needs.label.outputs.label }}',
    '      cancel-in-progress: false',
    '    env:',
    `      PIER_SERVER: ${server}`,
    `      PIER_PRODUCT: ${q(options.product)}`,
    '    steps:',
    `${s}- name: Fetch the update site`,
    `${s}  uses: ${uses(ACTIONS.downloadArtifact)}`,
    `${s}  with:`,
    `${s}    name: pier-update-site`,
    `${s}    path: ${artifactRoot(build)}`,
    ...nodeStep(),
    `${s}- name: Install the pier CLI`,
    `${s}  env:`,
    `${s}    # Optional: pier from this package, not the service's /cli/pier.mjs.`,
    `${s}    PIER_CLI_PACKAGE: \${{ vars.PIER_CLI_PACKAGE }}`,
    ...run(installLines(true), `${s}  `),
    `${s}- name: Publish to Pier`,
    `${s}  id: publish`,
    `${s}  env:`,
    `${s}    PIER_LABEL: \${{ needs.label.outputs.label }}`,
    `${s}    # Only without trusted publishing: when both are set, they are used instead.`,
    `${s}    PIER_EDIT_TOKEN: \${{ secrets.PIER_EDIT_TOKEN }}`,
    `${s}    PIER_SFTP_PASSWORD: \${{ secrets.PIER_SFTP_PASSWORD }}`,
    ...run(publishLines(build), `${s}  `),
    '',
  ].join('\n');
}
