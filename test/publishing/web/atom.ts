// Checks an Atom document with an independent parser (feedsmith) against the rules of
// RFC 4287 that readers rely on: ids, updated, titles, links, authors, content.
import assert from 'node:assert/strict';
import { XMLValidator } from 'fast-xml-parser';
import { parseAtomFeed } from 'feedsmith';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

function isAbsoluteIri(s: string | undefined): boolean {
  if (!s) return false;
  try {
    return new URL(s).protocol !== '';
  } catch {
    return false;
  }
}

export type AtomFeed = ReturnType<typeof parseAtomFeed<string>>;

/** Parses `xml` and asserts the Atom rules; returns the parsed feed for further checks. */
export function assertValidAtom(xml: string, selfUrl: string): AtomFeed {
  assert.equal(XMLValidator.validate(xml), true, 'well-formed XML');
  assert.match(xml, /<feed xmlns="http:\/\/www\.w3\.org\/2005\/Atom"/, 'Atom namespace on the root');
  const feed = parseAtomFeed(xml);
  // §4.1.1: exactly one id, title and updated; author unless every entry has one.
  assert.ok(isAbsoluteIri(feed.id), `feed id is an absolute IRI: ${feed.id}`);
  assert.ok(feed.title?.value, 'feed title');
  assert.match(String(feed.updated), RFC3339, 'feed updated is an RFC 3339 date-time');
  const entries = feed.entries ?? [];
  assert.ok(feed.authors?.length || entries.every((e) => e.authors?.length), 'an author for the feed or every entry');
  // §4.1.1: SHOULD have rel="self"; alternate links point at the page.
  const links = feed.links ?? [];
  assert.ok(links.some((l) => l.rel === 'self' && l.href === selfUrl), `rel=self ${selfUrl}`);
  assert.ok(links.some((l) => (l.rel ?? 'alternate') === 'alternate' && isAbsoluteIri(l.href)), 'rel=alternate');
  const ids = new Set<string>();
  const feedUpdated = Date.parse(String(feed.updated));
  for (const e of entries) {
    // §4.1.2: id, title, updated required; an alternate link when there is no inline content.
    assert.ok(isAbsoluteIri(e.id), `entry id is an absolute IRI: ${e.id}`);
    assert.ok(!ids.has(e.id as string), `entry ids are unique: ${e.id}`);
    ids.add(e.id as string);
    assert.ok(e.title?.value, `entry ${e.id} has a title`);
    assert.match(String(e.updated), RFC3339, `entry ${e.id} updated`);
    assert.ok(Date.parse(String(e.updated)) <= feedUpdated, 'feed updated is not older than any entry');
    assert.ok((e.links ?? []).some((l) => (l.rel ?? 'alternate') === 'alternate' && isAbsoluteIri(l.href)), `entry ${e.id} link`);
    assert.equal(e.content?.type, 'html', `entry ${e.id} content is html`);
    assert.ok(e.content?.value, `entry ${e.id} has content`);
  }
  return feed;
}
