/**
 * The CI run that holds a trusted-publishing credential. Products name it (a vendor request
 * authenticates as a product and, with such a credential, as this CI run); trusted publishing
 * (trust/) fills it from verified ID-token claims. It lives here, below trust/, because the
 * product service and its authentication hook only pass it on (`req.publisher`, the history,
 * releases).
 */
export interface Publisher {
  provider: 'github' | 'gitlab';
  /** GitHub `owner/repo`, GitLab `group/project`. */
  repository: string;
  /** GitHub: the caller's workflow file (`.github/workflows/release.yml`); GitLab: the CI config file. */
  workflow: string;
  /** GitHub: `refs/heads/main`, `refs/tags/v1.2`; GitLab: the branch or tag name. */
  ref: string;
  /** GitHub `run_id` (with `run_attempt` in runUrl), GitLab `pipeline_id`. */
  runId: string;
  runUrl?: string;
  /** The credential and binding behind it (history rows name them). */
  credentialId: string;
  bindingId: string;
}
