/**
 * Exit codes of `pier publish`, documented for CI (docs/vendors.md#publishing-with-pier-publish):
 * they tell CI which step failed, so a value never changes meaning.
 */
export const EXIT = {
  published: 0,
  usage: 2,
  siteCheck: 3,
  authentication: 4,
  pageFields: 5,
  upload: 6,
  releaseRefused: 7,
  timedOut: 8,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A step failed: `pier publish` prints the message (and the details, one a line) and exits with `exitCode`. */
export class PublishFailure extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
    this.name = 'PublishFailure';
  }
}
