/**
 * The third-party actions the generated GitHub workflow uses, each pinned by the full commit SHA
 * of a release with the release's tag in a comment (GitHub's "Security hardening for GitHub
 * Actions": a tag can be moved to other code, a commit cannot; the comment tells a reader, and
 * Dependabot, which release it is).
 */

export interface PinnedAction {
  /** `owner/repo` */
  name: string;
  /** The release's commit (40 hex digits). */
  sha: string;
  tag: string;
}

export const ACTIONS = {
  checkout: { name: 'actions/checkout', sha: '3d3c42e5aac5ba805825da76410c181273ba90b1', tag: 'v7.0.1' },
  setupJava: { name: 'actions/setup-java', sha: 'b6effb05e454b25005698d916606bdc6ffcbf961', tag: 'v5.7.0' },
  setupNode: { name: 'actions/setup-node', sha: '820762786026740c76f36085b0efc47a31fe5020', tag: 'v7.0.0' },
  setupPixi: { name: 'prefix-dev/setup-pixi', sha: '5185adfbffb4bd703da3010310260805d89ebb11', tag: 'v0.9.6' },
  setupMicromamba: { name: 'mamba-org/setup-micromamba', sha: 'd7c9bd84e824b79d2af72a2d4196c7f4300d3476', tag: 'v3.0.0' },
  uploadArtifact: { name: 'actions/upload-artifact', sha: 'bbbca2ddaa5d8feaa63e36b76fdaad77386f024f', tag: 'v7.0.0' },
  downloadArtifact: { name: 'actions/download-artifact', sha: '3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c', tag: 'v8.0.1' },
} as const satisfies Record<string, PinnedAction>;

/** The `uses:` line's value: `owner/repo@<sha> # <tag>`. */
export function uses(action: PinnedAction): string {
  return `${action.name}@${action.sha} # ${action.tag}`;
}
