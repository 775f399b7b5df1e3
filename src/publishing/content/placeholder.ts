// `{{platformRelease}}` stands for the platform release set with `pier staff set-release`
// (spec "Product": text). It is replaced in the Markdown source before parsing, so it also
// works inside code spans, fenced blocks and link targets, which is where vendors write
// update-site URLs. The release is a validated version number, so it cannot add markup.
export const PLATFORM_RELEASE_PLACEHOLDER = '{{platformRelease}}';

/** The Markdown with every placeholder replaced; unchanged while no release is set. */
export function substitutePlatformRelease(markdown: string, release: string | null): string {
  if (release === null || !markdown.includes(PLATFORM_RELEASE_PLACEHOLDER)) return markdown;
  return markdown.split(PLATFORM_RELEASE_PLACEHOLDER).join(release);
}
