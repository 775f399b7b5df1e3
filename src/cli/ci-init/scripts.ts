/**
 * The shell lines both pipelines run. POSIX sh, so they work in GitHub's bash and in whatever
 * shell a GitLab image has. The site and archive paths come from the detected build.
 */
import type { Build } from './detect.js';

/** A word quoted for sh when it needs quoting (paths the detection found may hold spaces). */
export function sh(word: string): string {
  return /^[A-Za-z0-9_./=:@+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The site folder and the archive, quoted for sh (a glob for Tycho, whose zip is named by the pom). */
export function outputs(build: Build): { site: string; archive: string } {
  if (build.kind === 'python') return { site: sh(build.site), archive: sh(build.archive) };
  return { site: sh(build.site), archive: `${build.module ? sh(`${build.module}/target/`) : 'target/'}*.zip` };
}

/**
 * Bundles a pure-Python extension, then zips the bundled site (spec SFTP rule 5: an archive and
 * the folder). `python` runs the zip; `inEnv` prefixes the bundler when it lives in an
 * environment the shell has not activated (`micromamba run --name base `).
 */
export function pythonBuildLines(build: Extract<Build, { kind: 'python' }>, python: string, inEnv = ''): string[] {
  const bundle =
    build.runner === 'pixi'
      ? // The KNIME template's task: build_python_extension.py --knime-build . {{ dest }}
        `pixi run build ${sh(build.site)}`
      : `${inEnv}build_python_extension.py ${sh(build.extension)} ${sh(build.site)}`;
  return ['rm -rf pier-build', bundle, `(cd ${sh(build.site)} && ${python} -m zipfile -c ../update-site.zip *)`];
}

/**
 * Installs the pier CLI: by default the one-file `pier` the service itself serves at
 * `/cli/pier.mjs` (Node.js is all it needs); or, when the vendor sets PIER_CLI_PACKAGE, whatever
 * npm installs from that (a tarball, a git URL, their own registry). `githubPath`: later steps
 * of a GitHub job get the folder on their PATH too.
 */
export function installLines(githubPath = false): string[] {
  return [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a JavaScript template
    'if [ -n "${PIER_CLI_PACKAGE:-}" ]; then',
    '  npm install --global --no-fund --no-audit "$PIER_CLI_PACKAGE"',
    'else',
    '  mkdir -p "$HOME/.pier/bin"',
    '  curl -fsSL --retry 3 "$PIER_SERVER/cli/pier.mjs" -o "$HOME/.pier/pier.mjs"',
    `  printf '#!/bin/sh\\nexec node "%s" "$@"\\n' "$HOME/.pier/pier.mjs" > "$HOME/.pier/bin/pier"`,
    '  chmod +x "$HOME/.pier/bin/pier"',
    '  export PATH="$HOME/.pier/bin:$PATH"',
    ...(githubPath ? ['  echo "$HOME/.pier/bin" >> "$GITHUB_PATH"'] : []),
    'fi',
    'pier --version',
  ];
}

/**
 * Takes the label from the tag or branch (`pier ci label`, overridden by PIER_LABEL), then
 * runs `pier publish`. No secret is needed: in GitHub Actions and GitLab CI `pier publish`
 * exchanges the job's OIDC ID token itself. `pier publish` prefers that token whenever the CI
 * offers one, so when the vendor has set both stored secrets (no trusted-publishing binding yet)
 * the token is hidden from it and the secrets are used, as the vendor asked by setting them.
 */
export function publishLines(build: Build): string[] {
  const { site, archive } = outputs(build);
  return [
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a JavaScript template
    'if [ -n "${PIER_EDIT_TOKEN:-}" ] && [ -n "${PIER_SFTP_PASSWORD:-}" ]; then',
    '  echo "Using the stored secrets PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD (remove them to publish with trusted publishing)"',
    '  unset ACTIONS_ID_TOKEN_REQUEST_URL ACTIONS_ID_TOKEN_REQUEST_TOKEN PIER_ID_TOKEN',
    'fi',
    'label="$(pier ci label)"',
    `set -- --server "$PIER_SERVER" --product "$PIER_PRODUCT" --label "$label" --site ${site}`,
    `for zip in ${archive}; do`,
    '  if [ -f "$zip" ]; then set -- "$@" --archive "$zip"; fi',
    'done',
    'echo "Publishing $PIER_PRODUCT to label $label"',
    'pier publish "$@"',
  ];
}
