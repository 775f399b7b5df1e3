// Keep a Changelog parser over markdown-it tokens (spec "Product" rule 2, NOTES "Changelog and
// Markdown"). Tokens, not line regexes: fenced code is opaque, lines come from token maps,
// versions stay as written (OSGi qualifiers included) and releases are never re-sorted.
import { parseMarkdown, stripHtmlComments } from './markdown.js';
import { parseReleaseHeading } from './release-heading.js';
import {
  type Block,
  type ContentIssue,
  headingLevel,
  headingSource,
  headingText,
  itemMarkdown,
  sliceLines,
  type Token,
  topLevelBlocks,
} from './tokens.js';

export type { ContentIssue } from './tokens.js';

export const CHANGE_TYPES = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security', 'Info'] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

export interface ChangelogItem {
  /** The item's Markdown without its "- " marker, continuation lines de-indented. */
  markdown: string;
  line: number;
}

export interface ChangelogSection {
  type: string;
  /** One of CHANGE_TYPES (exact case); others still parse but render without a badge. */
  known: boolean;
  items: ChangelogItem[];
  line: number;
}

export interface ChangelogRelease {
  /** "Unreleased" for the unreleased block, else the version exactly as written. */
  version: string;
  date: string | null;
  unreleased: boolean;
  yanked: boolean;
  /** Markdown between the "##" heading and its first "###" (Keep a Changelog 2.0 summary). */
  summary: string;
  sections: ChangelogSection[];
  line: number;
  /** A "**Breaking:**" marker appears somewhere in the release. */
  breaking: boolean;
}

export interface Changelog {
  title: string;
  /** Markdown between the "# Title" and the first "##". */
  intro: string;
  releases: ChangelogRelease[];
}

export interface ChangelogResult {
  /** null whenever errors is non-empty, so an invalid changelog is never rendered by mistake. */
  changelog: Changelog | null;
  errors: ContentIssue[];
  warnings: ContentIssue[];
}

const KNOWN = new Set<string>(CHANGE_TYPES);

/**
 * Parses a Keep a Changelog document. An empty or whitespace-only (or comments-only) input
 * yields the error "changelog is empty" without a line: a caller for which an empty field
 * means "no changelog" (e.g. PATCH clearing it) should test `src.trim() === ''` first.
 */
export function parseChangelog(src: string): ChangelogResult {
  const text = stripHtmlComments(src);
  if (text.trim() === '') return { changelog: null, errors: [{ message: 'changelog is empty' }], warnings: [] };
  const lines = text.split('\n');
  const state = new ParseState(lines);
  for (const block of topLevelBlocks(parseMarkdown(text))) state.add(block);
  return state.finish();
}

/** The newest real release: first in document order that is neither unreleased nor yanked. */
export function latestRelease(changelog: Changelog): ChangelogRelease | null {
  return changelog.releases.find((r) => !r.unreleased && !r.yanked) ?? null;
}

class ParseState {
  readonly errors: ContentIssue[] = [];
  readonly warnings: ContentIssue[] = [];
  readonly releases: ChangelogRelease[] = [];
  title: string | null = null;
  titleSeen = false;
  titleEnd = 0;
  introEnd: number | null = null;
  /** The release and section that following blocks belong to; null release after a bad "##". */
  release: ChangelogRelease | null = null;
  summaryStart = 0;
  summaryEnd: number | null = null;
  section: ChangelogSection | null = null;
  skipping = false;
  warnedPreamble = false;
  /** End of the previous block: regions end there, not at the next heading, so trailing
   * link reference definitions (which make no tokens) are not swept into a summary. */
  lastEnd = 0;
  readonly seen = new Map<string, number>();

  constructor(readonly lines: readonly string[]) {}

  add(block: Block): void {
    this.addBlock(block);
    this.lastEnd = block.end;
  }

  addBlock(block: Block): void {
    const level = headingLevel(block);
    if (level === 1) this.addTitle(block);
    else if (level === 2) this.addRelease(block);
    else if (!this.titleSeen && this.releases.length === 0 && !this.skipping) this.addPreamble(block);
    else if (this.release && !this.skipping) this.addToRelease(block, level);
  }

  addPreamble(block: Block): void {
    if (this.warnedPreamble) return;
    this.warnedPreamble = true;
    this.warn(block.start, 'text before the "# Title" heading is ignored');
  }

  addToRelease(block: Block, level: number): void {
    if (this.release) markBreaking(this.release, block.tokens);
    if (level === 3) this.addSection(block);
    else if (this.section) this.addToSection(block);
    else if (block.tokens[0]?.type === 'bullet_list_open' || block.tokens[0]?.type === 'ordered_list_open') {
      this.warn(block.start, 'list items outside a "### Type" section are shown as part of the release summary');
    }
  }

  addTitle(block: Block): void {
    const again = this.titleSeen;
    this.titleSeen = true;
    if (again) {
      this.error(block.start, 'more than one "# Title" heading');
    } else if (this.releases.length > 0 || this.skipping) {
      this.error(block.start, 'the "# Title" heading must come before the first release');
    } else {
      this.title = headingText(block);
      if (this.title === '') this.error(block.start, 'the "# Title" heading is empty');
      this.titleEnd = block.end;
    }
  }

  addRelease(block: Block): void {
    this.closeRelease();
    this.introEnd ??= this.lastEnd;
    const parsed = parseReleaseHeading(headingSource(block));
    if ('error' in parsed) {
      this.skipping = true;
      this.error(block.start, parsed.error);
      return;
    }
    this.skipping = false;
    const key = parsed.unreleased ? 'Unreleased' : parsed.version;
    const first = this.seen.get(key);
    if (first !== undefined) {
      this.error(block.start, parsed.unreleased
        ? `"## [Unreleased]" may appear only once (first at line ${first + 1})`
        : `duplicate version ${parsed.version} (first at line ${first + 1})`);
    } else {
      this.seen.set(key, block.start);
    }
    if (parsed.unreleased && this.releases.length > 0) {
      this.warn(block.start, '"## [Unreleased]" should be the first release');
    }
    this.release = {
      version: parsed.unreleased ? 'Unreleased' : parsed.version,
      date: parsed.date,
      unreleased: parsed.unreleased,
      yanked: parsed.yanked,
      summary: '',
      sections: [],
      line: block.start + 1,
      breaking: false,
    };
    markBreaking(this.release, block.tokens);
    this.releases.push(this.release);
    this.summaryStart = block.end;
    this.summaryEnd = null;
  }

  addSection(block: Block): void {
    this.summaryEnd ??= this.lastEnd;
    const type = headingText(block);
    const known = KNOWN.has(type);
    if (!known) {
      const hint = CHANGE_TYPES.find((t) => t.toLowerCase() === type.toLowerCase());
      this.warn(block.start, hint
        ? `unknown change type "${type}" (did you mean "${hint}"?)`
        : `unknown change type "${type}"; it is shown without a badge (known: ${CHANGE_TYPES.join(', ')})`);
    }
    this.section = { type, known, items: [], line: block.start + 1 };
    this.release?.sections.push(this.section);
  }

  addToSection(block: Block): void {
    const open = block.tokens[0];
    if (open?.type === 'bullet_list_open') {
      for (const token of block.tokens) {
        if (token.type === 'list_item_open' && token.level === 1 && token.map) {
          const [start, end] = token.map;
          this.section?.items.push({ markdown: itemMarkdown(this.lines, start, end), line: start + 1 });
        }
      }
      return;
    }
    // Deeper headings are allowed anywhere (they structure the text); other blocks are not
    // changes and would silently vanish from the rendered page, so say so.
    if (open?.type === 'heading_open') return;
    this.warn(block.start, `only "- " list items are changes; this ${describe(open)} in "### ${this.section?.type}" is ignored`);
  }

  closeRelease(): void {
    if (this.release) {
      this.release.summary = sliceLines(this.lines, this.summaryStart, this.summaryEnd ?? this.lastEnd);
    }
    this.release = null;
    this.section = null;
  }

  finish(): ChangelogResult {
    this.closeRelease();
    if (!this.titleSeen) {
      this.errors.unshift({ line: 1, message: 'missing "# Title" heading' });
    }
    const intro = this.title === null ? '' : sliceLines(this.lines, this.titleEnd, this.introEnd ?? this.lastEnd);
    const changelog = { title: this.title ?? '', intro, releases: this.releases };
    return { changelog: this.errors.length ? null : changelog, errors: this.errors, warnings: this.warnings };
  }

  error(line0: number, message: string): void {
    this.errors.push({ line: line0 + 1, message });
  }

  warn(line0: number, message: string): void {
    this.warnings.push({ line: line0 + 1, message });
  }
}

function describe(open: Token | undefined): string {
  switch (open?.type) {
    case 'paragraph_open': return 'paragraph';
    case 'ordered_list_open': return 'numbered list';
    case 'fence':
    case 'code_block': return 'code block';
    case 'table_open': return 'table';
    case 'blockquote_open': return 'quote';
    default: return 'block';
  }
}

/** Sets release.breaking when a strong "Breaking:" marker appears in these tokens. */
function markBreaking(release: ChangelogRelease, tokens: readonly Token[]): void {
  if (release.breaking) return;
  for (const token of tokens) {
    const children = token.children ?? [];
    for (let i = 0; i + 2 < children.length; i++) {
      if (children[i]?.type !== 'strong_open') continue;
      const inner = children[i + 1];
      // Accept "**Breaking:**" and "**Breaking**:" in any case.
      if (inner?.type === 'text' && /^breaking\s?:?$/i.test(inner.content.trim()) && children[i + 2]?.type === 'strong_close') {
        release.breaking = true;
        return;
      }
    }
  }
}
