/**
 * The GitHub Actions workflow `pier ci init --github` writes: on a `v*` tag (and by hand), build
 * the update site, install the pier CLI, publish with trusted publishing
 * (`permissions: id-token: write`: the job may ask GitHub for an OIDC ID token, which
 * `pier publish` exchanges at the server's /api/oidc/token; no stored secret).
 */
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
      `${s}  uses: actions/setup-java@v4`,
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
      `${s}  uses: prefix-dev/setup-pixi@v0.8.2`,
      `${s}- name: Build the update site`,
      `${s}  id: build`,
      `${s}  # The pixi task runs the platform's build_python_extension.py (knime-extension-bundling).`,
      ...run(pythonBuildLines(build, 'python3'), `${s}  `),
    ];
  }
  return [
    `${s}- name: Set up the bundling environment`,
    `${s}  uses: mamba-org/setup-micromamba@v2`,
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

export function githubWorkflow(build: Build, options: PipelineOptions): string {
  const s = '      ';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JavaScript template
  const server = options.server ? q(options.server) : '${{ vars.PIER_SERVER }}';
  return [
    '# Publishes the update site to Pier on release tags (v*) and manual runs, with no stored',
    '# secret (trusted publishing). Label: the "label" input, else the variable PIER_LABEL, else',
    '# the tag: v5.3.1 -> 5.3, v5.3.0-rc.1 -> 5.3.0-rc.1. Written by `pier ci init`; see',
    `# "Publishing from CI" in Pier's vendor guide.`,
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
    'permissions:',
    '  id-token: write # trusted publishing: the job may ask GitHub for an OIDC ID token',
    '  contents: read',
    '',
    '# One publish per ref at a time: a second waits instead of racing the first upload.',
    'concurrency:',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, not a JavaScript template
    '  group: pier-publish-${{ github.ref }}',
    '  cancel-in-progress: false',
    '',
    'defaults:',
    '  run:',
    '    shell: bash',
    '',
    'jobs:',
    '  publish:',
    '    name: Build and publish',
    '    runs-on: ubuntu-latest',
    '    env:',
    `      PIER_SERVER: ${server}`,
    `      PIER_PRODUCT: ${q(options.product)}`,
    '    steps:',
    `${s}- name: Check out`,
    `${s}  uses: actions/checkout@v4`,
    ...buildSteps(build),
    `${s}- name: Set up Node.js`,
    `${s}  uses: actions/setup-node@v4`,
    `${s}  with:`,
    `${s}    node-version: '22'`,
    `${s}- name: Install the pier CLI`,
    `${s}  id: install-pier`,
    `${s}  env:`,
    `${s}    # Optional: install pier from this package instead of the service's /cli/pier.mjs.`,
    `${s}    PIER_CLI_PACKAGE: \${{ vars.PIER_CLI_PACKAGE }}`,
    ...run(installLines(true), `${s}  `),
    `${s}- name: Publish to Pier`,
    `${s}  id: publish`,
    `${s}  env:`,
    `${s}    PIER_LABEL: \${{ inputs.label || vars.PIER_LABEL }}`,
    `${s}    # Only without trusted publishing: when both secrets are set, they are used instead.`,
    `${s}    PIER_EDIT_TOKEN: \${{ secrets.PIER_EDIT_TOKEN }}`,
    `${s}    PIER_SFTP_PASSWORD: \${{ secrets.PIER_SFTP_PASSWORD }}`,
    ...run(publishLines(build), `${s}  `),
    '',
  ].join('\n');
}
