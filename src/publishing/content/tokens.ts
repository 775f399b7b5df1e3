// Small helpers over markdown-it's token stream, shared by the changelog and FAQ parsers.
// Working on tokens (not regexes over lines) keeps code blocks opaque: a "- " or "## "
// line inside a fence is part of a `fence` token and never looks like structure.
import type MarkdownIt from 'markdown-it';

export type Token = ReturnType<MarkdownIt['parse']>[number];

/** A 1-based line plus a message; the shape every content check reports. */
export interface ContentIssue {
  line?: number;
  message: string;
}

/** One top-level block: its tokens (opener … closer) and its 0-based [start, end) lines. */
export interface Block {
  tokens: Token[];
  start: number;
  end: number;
}

/** markdown-it normalises newlines before parsing; we do the same so maps index our lines. */
export function normalizeNewlines(src: string): string {
  return src.replace(/\r\n?/g, '\n');
}

/** Splits a token stream into top-level blocks (heading, paragraph, list, fence, …). */
export function topLevelBlocks(tokens: readonly Token[]): Block[] {
  const blocks: Block[] = [];
  let current: Token[] = [];
  let depth = 0;
  for (const token of tokens) {
    current.push(token);
    depth += token.nesting;
    if (depth === 0) {
      const map = current[0]?.map;
      if (map) blocks.push({ tokens: current, start: map[0], end: map[1] });
      current = [];
    }
  }
  return blocks;
}

/** Heading level (1–6) when the block is a heading, else 0. */
export function headingLevel(block: Block): number {
  const open = block.tokens[0];
  if (open?.type !== 'heading_open') return 0;
  return Number(open.tag.slice(1));
}

/** Plain text of an inline token's children (what a reader sees, markup removed). */
export function inlineText(children: readonly Token[] | null): string {
  let text = '';
  for (const child of children ?? []) {
    if (child.type === 'text' || child.type === 'code_inline') text += child.content;
    else if (child.type === 'softbreak' || child.type === 'hardbreak') text += ' ';
    else if (child.type === 'image') text += inlineText(child.children);
  }
  return text.trim();
}

/** The heading's plain text, for a heading block. */
export function headingText(block: Block): string {
  return inlineText(block.tokens[1]?.children ?? null);
}

/** The raw inline source of a heading (e.g. "[1.0.0](https://…) - 2024-01-01"). */
export function headingSource(block: Block): string {
  return (block.tokens[1]?.content ?? '').trim();
}

/** Lines [start, end) joined, without leading/trailing blank lines (indentation kept). */
export function sliceLines(lines: readonly string[], start: number, end: number): string {
  let from = start;
  let to = Math.min(end, lines.length);
  while (from < to && (lines[from] ?? '').trim() === '') from++;
  while (to > from && (lines[to - 1] ?? '').trim() === '') to--;
  return lines.slice(from, to).join('\n');
}

/**
 * An item's source without its bullet: the first line loses "- ", continuation lines lose
 * the item's content indent (CommonMark list item rules), so nested lists and code survive.
 */
export function itemMarkdown(lines: readonly string[], start: number, end: number): string {
  const first = lines[start] ?? '';
  const m = /^([ \t]*)[-*+]([ \t]*)/.exec(first) ?? ['', '', ''];
  const markerEnd = (m[1] ?? '').length + 1;
  const gap = (m[2] ?? '').length;
  const rest = first.slice(markerEnd + gap);
  // Blank after the marker, or 5+ spaces (content is indented code): indent is marker + 1.
  const indent = rest === '' || gap > 4 ? markerEnd + 1 : markerEnd + gap;
  const out = [first.slice(Math.min(indent, first.length))];
  for (let l = start + 1; l < Math.min(end, lines.length); l++) out.push(dedent(lines[l] ?? '', indent));
  return sliceLines(out, 0, out.length);
}

/** Removes up to `width` columns of leading whitespace (tabs to the next stop of 4). */
function dedent(line: string, width: number): string {
  let col = 0;
  let i = 0;
  while (i < line.length && col < width) {
    const ch = line[i];
    if (ch === ' ') col++;
    else if (ch === '\t') col += 4 - (col % 4);
    else break;
    i++;
  }
  return line.slice(i);
}
