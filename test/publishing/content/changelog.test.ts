import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Changelog, latestRelease, parseChangelog } from '../../../src/publishing/content/changelog.js';

/** Parses and insists on success, so a test about content fails loudly on a stray error. */
function ok(src: string): Changelog {
  const result = parseChangelog(src);
  assert.deepEqual(result.errors, []);
  assert.ok(result.changelog);
  return result.changelog;
}

const lines = (...l: string[]) => l.join('\n');

describe('parseChangelog: structure', () => {
  it('reads title, intro, releases, summary, sections and items with 1-based lines', () => {
    const src = lines(
      '# Changelog', //                       1
      '',
      'All notable changes to **this** extension.', // 3
      '',
      '## [Unreleased]', //                   5
      '',
      '## [1.1.0] - 2024-03-01', //           7
      '',
      'A summary paragraph.', //              9
      '',
      '### Added', //                         11
      '- New node', //                        12
      '- Another node', //                    13
      '',
      '### Fixed', //                         15
      '- A crash', //                         16
      '',
      '## [1.0.0] - 2024-01-15', //           18
      '### Info', //                          19
      '- First release', //                   20
    );
    const cl = ok(src);
    assert.equal(cl.title, 'Changelog');
    assert.equal(cl.intro, 'All notable changes to **this** extension.');
    assert.deepEqual(
      cl.releases.map((r) => [r.version, r.date, r.unreleased, r.line]),
      [['Unreleased', null, true, 5], ['1.1.0', '2024-03-01', false, 7], ['1.0.0', '2024-01-15', false, 18]],
    );
    const [, r110, r100] = cl.releases;
    assert.equal(r110?.summary, 'A summary paragraph.');
    assert.deepEqual(r110?.sections, [
      { type: 'Added', known: true, line: 11, items: [{ markdown: 'New node', line: 12 }, { markdown: 'Another node', line: 13 }] },
      { type: 'Fixed', known: true, line: 15, items: [{ markdown: 'A crash', line: 16 }] },
    ]);
    assert.deepEqual(r100?.sections, [{ type: 'Info', known: true, line: 19, items: [{ markdown: 'First release', line: 20 }] }]);
    assert.equal(r100?.summary, '');
  });

  it('keeps releases in document order, never re-sorted', () => {
    const cl = ok(lines('# C', '## [1.0.0] - 2024-01-01', '## [3.0.0] - 2022-01-01', '## [2.0.0] - 2023-01-01'));
    assert.deepEqual(cl.releases.map((r) => r.version), ['1.0.0', '3.0.0', '2.0.0']);
  });

  it('keeps OSGi, SemVer pre-release/build and short versions exactly as written', () => {
    const versions = ['1.2.3.v20240101', '5.3.0.qualifier', '1.2.3-rc.1+build.5', '4.7.1.v202301011200', '1.2', '5', '2.0.0_beta'];
    const src = ['# C', ...versions.map((v, i) => `## [${v}] - 2024-01-${String(i + 1).padStart(2, '0')}`)].join('\n');
    assert.deepEqual(ok(src).releases.map((r) => r.version), versions);
  });

  it('treats fenced code in an item as opaque ("- " and "## " lines inside are not structure)', () => {
    const src = lines(
      '# C',
      '## [1.0.0] - 2024-01-01',
      '### Changed',
      '- Config format changed:',
      '  ```yaml',
      '  - not: an item',
      '  ## [9.9.9] - 2024-01-01',
      '  ### Removed',
      '  ```',
      '- Second',
      '',
      '```',
      '## [8.8.8] - bad date would be an error if read',
      '```',
    );
    const result = parseChangelog(src);
    assert.deepEqual(result.errors, []);
    const release = result.changelog?.releases[0];
    assert.equal(result.changelog?.releases.length, 1);
    assert.deepEqual(release?.sections.map((s) => s.type), ['Changed']);
    assert.deepEqual(release?.sections[0]?.items, [
      { markdown: 'Config format changed:\n```yaml\n- not: an item\n## [9.9.9] - 2024-01-01\n### Removed\n```', line: 4 },
      { markdown: 'Second', line: 10 },
    ]);
    // The top-level fence sits inside "### Changed" but is not a change: reported, not parsed.
    assert.deepEqual(result.warnings.map((w) => w.line), [12]);
  });

  it('keeps nested lists and continuation lines in an item, de-indented', () => {
    const src = lines('# C', '## [1.0.0] - 2024-01-01', '### Added', '- Parent', '  more text', '', '  - child', '    - grandchild', '* Star item', '+ Plus item');
    const items = ok(src).releases[0]?.sections[0]?.items;
    assert.deepEqual(items, [
      { markdown: 'Parent\nmore text\n\n- child\n  - grandchild', line: 4 },
      { markdown: 'Star item', line: 9 },
      { markdown: 'Plus item', line: 10 },
    ]);
  });

  it('strips HTML comments first and keeps line numbers of what follows', () => {
    const src = lines(
      '# C',
      '<!--',
      '## [0.0.1] - not a date',
      '- stray item',
      '-->',
      '## [1.0.0] - 2024-01-01 <!-- inline note -->',
      '### Added',
      '- Real <!-- hidden --> item',
      '## [1.0.0 beta] - 2024-01-01',
    );
    const result = parseChangelog(src);
    // Only the genuinely bad heading on line 9 is reported, at its original line.
    assert.deepEqual(result.errors.map((e) => e.line), [9]);
    assert.match(result.errors[0]?.message ?? '', /invalid version "1\.0\.0 beta"/);
    const fixed = parseChangelog(src.replace('## [1.0.0 beta] - 2024-01-01', ''));
    assert.equal(fixed.changelog?.releases[0]?.line, 6);
    assert.deepEqual(fixed.changelog?.releases[0]?.sections[0]?.items, [{ markdown: 'Real  item', line: 8 }]);
  });

  it('reads CRLF input with the same lines', () => {
    const cl = ok('# C\r\n\r\n## [1.0.0] - 2024-01-01\r\n### Fixed\r\n- x\r\n');
    assert.equal(cl.releases[0]?.line, 3);
    assert.deepEqual(cl.releases[0]?.sections[0]?.items, [{ markdown: 'x', line: 5 }]);
  });
});

describe('parseChangelog: release headings', () => {
  it('accepts reference-link and inline-link version headings', () => {
    const cl = ok(lines(
      '# C',
      '## [Unreleased](https://example.com/compare/v2...HEAD)',
      '## [2.0.0](https://example.com/v2) - 2024-02-01',
      '## [1.0.0] - 2024-01-01',
      '## [0.9.0][old] - 2023-12-01',
      '',
      '[1.0.0]: https://example.com/v1',
      '[old]: https://example.com/v0',
    ));
    assert.deepEqual(cl.releases.map((r) => r.version), ['Unreleased', '2.0.0', '1.0.0', '0.9.0']);
  });

  it('marks [YANKED] releases and skips them and Unreleased in latestRelease', () => {
    const cl = ok(lines('# C', '## [Unreleased]', '## [1.1.0] - 2024-02-01 [YANKED]', '## [1.0.0] - 2024-01-01'));
    assert.deepEqual(cl.releases.map((r) => r.yanked), [false, true, false]);
    assert.equal(cl.releases[1]?.date, '2024-02-01');
    assert.equal(latestRelease(cl)?.version, '1.0.0');
    assert.equal(latestRelease(ok('# C\n## [Unreleased]')), null);
  });

  it('accepts an en dash between version and date', () => {
    assert.equal(ok('# C\n## [1.0.0] \u2013 2024-01-01').releases[0]?.date, '2024-01-01');
  });

  it('validates calendar dates (Feb 29 only in leap years)', () => {
    assert.equal(ok('# C\n## [1.0.0] - 2024-02-29').releases[0]?.date, '2024-02-29');
    assert.equal(ok('# C\n## [1.0.0] - 2000-02-29').releases[0]?.date, '2000-02-29');
    for (const date of ['2023-02-29', '1900-02-29', '2024-04-31', '2024-13-01', '2024-00-10', '2024-1-1', '01-01-2024', 'today']) {
      const result = parseChangelog(`# C\n\n## [1.0.0] - ${date}`);
      assert.equal(result.changelog, null, date);
      assert.deepEqual(result.errors.map((e) => e.line), [3], date);
      assert.match(result.errors[0]?.message ?? '', /invalid date/, date);
    }
  });

  it('rejects versions that do not start with a digit or use other characters, naming the line', () => {
    const cases: [string, RegExp][] = [
      ['v1.0.0', /drop the leading "v"/],
      ['abc', /starts with a digit/],
      ['1.0/2', /invalid version/],
      ['', /invalid version ""/],
    ];
    for (const [version, message] of cases) {
      const result = parseChangelog(`# C\n## [1.0.0] - 2024-01-01\n## [${version}] - 2024-01-01`);
      assert.deepEqual(result.errors.map((e) => e.line), [3], version);
      assert.match(result.errors[0]?.message ?? '', message, version);
    }
  });

  it('reports a "##" heading that is not a release with its line', () => {
    const result = parseChangelog(lines('# C', '## [1.0.0] - 2024-01-01', '### Added', '- a', '## Older versions', '- b', '### Fixed'));
    assert.deepEqual(result.errors, [{ line: 5, message: '"## Older versions" is not a release heading: expected "## [Version] - YYYY-MM-DD" or "## [Unreleased]"' }]);
    assert.equal(result.changelog, null);
    const unbracketed = parseChangelog('# C\n## 1.0.0 - 2024-01-01');
    assert.match(unbracketed.errors[0]?.message ?? '', /square brackets/);
    const noDate = parseChangelog('# C\n## [1.0.0]');
    assert.deepEqual(noDate.errors, [{ line: 2, message: 'release 1.0.0 has no date: expected "## [1.0.0] - YYYY-MM-DD"' }]);
    const trailing = parseChangelog('# C\n## [1.0.0] - 2024-01-01 final');
    assert.match(trailing.errors[0]?.message ?? '', /found "- 2024-01-01 final"/);
  });

  it('rejects duplicate versions, pointing at both lines', () => {
    const result = parseChangelog(lines('# C', '## [1.0.0] - 2024-01-02', '## [0.9.0] - 2024-01-01', '## [1.0.0] - 2024-01-01'));
    assert.deepEqual(result.errors, [{ line: 4, message: 'duplicate version 1.0.0 (first at line 2)' }]);
  });

  it('allows [Unreleased] once, without a date, and warns when it is not first', () => {
    const twice = parseChangelog('# C\n## [Unreleased]\n## [unreleased]');
    assert.deepEqual(twice.errors.map((e) => e.line), [3]);
    assert.match(twice.errors[0]?.message ?? '', /only once/);
    const dated = parseChangelog('# C\n## [Unreleased] - 2024-01-01');
    assert.deepEqual(dated.errors.map((e) => e.line), [2]);
    const late = parseChangelog('# C\n## [1.0.0] - 2024-01-01\n## [Unreleased]');
    assert.deepEqual(late.errors, []);
    assert.deepEqual(late.warnings, [{ line: 3, message: '"## [Unreleased]" should be the first release' }]);
  });
});

describe('parseChangelog: title, sections and markers', () => {
  it('requires exactly one "# Title"', () => {
    assert.deepEqual(parseChangelog('## [1.0.0] - 2024-01-01').errors, [{ line: 1, message: 'missing "# Title" heading' }]);
    const two = parseChangelog('# One\n\n## [1.0.0] - 2024-01-01\n# Two');
    assert.deepEqual(two.errors, [{ line: 4, message: 'more than one "# Title" heading' }]);
    const late = parseChangelog('## [1.0.0] - 2024-01-01\n# Late');
    assert.deepEqual(late.errors, [{ line: 2, message: 'the "# Title" heading must come before the first release' }]);
  });

  it('warns about text before the title', () => {
    const result = parseChangelog('Preamble\n\n# C\n## [1.0.0] - 2024-01-01');
    assert.deepEqual(result.warnings, [{ line: 1, message: 'text before the "# Title" heading is ignored' }]);
    assert.equal(result.changelog?.intro, '');
  });

  it('accepts unknown "###" types with a warning and known=false; matching is case-sensitive', () => {
    const result = parseChangelog(lines('# C', '## [1.0.0] - 2024-01-01', '### Performance', '- faster', '### added', '- x'));
    assert.deepEqual(result.errors, []);
    assert.deepEqual(result.changelog?.releases[0]?.sections.map((s) => [s.type, s.known, s.items.length]), [['Performance', false, 1], ['added', false, 1]]);
    assert.deepEqual(result.warnings.map((w) => w.line), [3, 5]);
    assert.match(result.warnings[0]?.message ?? '', /unknown change type "Performance"/);
    assert.match(result.warnings[1]?.message ?? '', /did you mean "Added"/);
  });

  it('sets breaking from a **Breaking:** marker anywhere in the release, but not in code', () => {
    const cl = ok(lines(
      '# C',
      '## [3.0.0] - 2024-03-01',
      '### Changed',
      '- **Breaking:** renamed the node',
      '## [2.0.0] - 2024-02-01',
      '**BREAKING**: summary says so',
      '## [1.0.0] - 2024-01-01',
      '### Changed',
      '- `**Breaking:**` in code does not count',
      '',
      '```',
      '**Breaking:** nor in a fence',
      '```',
    ));
    assert.deepEqual(cl.releases.map((r) => r.breaking), [true, true, false]);
  });

  it('puts list items before the first "###" into the summary with a warning', () => {
    const result = parseChangelog(lines('# C', '## [1.0.0] - 2024-01-01', 'Intro.', '', '- loose item', '### Fixed', '- x'));
    assert.deepEqual(result.errors, []);
    assert.equal(result.changelog?.releases[0]?.summary, 'Intro.\n\n- loose item');
    assert.deepEqual(result.warnings.map((w) => w.line), [5]);
  });

  it('warns about non-list blocks in a section but allows deeper headings', () => {
    const result = parseChangelog(lines('# C', '## [1.0.0] - 2024-01-01', '### Fixed', '#### Details', '- x', '', 'A paragraph.', '', '1. numbered'));
    assert.deepEqual(result.errors, []);
    assert.deepEqual(result.warnings.map((w) => w.line), [7, 9]);
    assert.match(result.warnings[1]?.message ?? '', /numbered list in "### Fixed"/);
    assert.deepEqual(result.changelog?.releases[0]?.sections[0]?.items, [{ markdown: 'x', line: 5 }]);
  });

  it('does not sweep trailing link reference definitions into the last summary', () => {
    const cl = ok(lines('# C', '## [1.0.0] - 2024-01-01', 'Summary.', '', '[1.0.0]: https://example.com'));
    assert.equal(cl.releases[0]?.summary, 'Summary.');
  });

  it('reports an empty changelog without a line and returns no changelog', () => {
    for (const src of ['', '   \n\n', '<!-- only a comment -->']) {
      assert.deepEqual(parseChangelog(src), { changelog: null, errors: [{ message: 'changelog is empty' }], warnings: [] });
    }
  });

  it('accepts a changelog with only a title', () => {
    const cl = ok('# Changelog\n\nNothing yet.');
    assert.deepEqual(cl, { title: 'Changelog', intro: 'Nothing yet.', releases: [] });
    assert.equal(latestRelease(cl), null);
  });
});
