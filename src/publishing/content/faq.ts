// FAQ: each top-level "## Question" heading is a question and the Markdown up to the next
// "##" is its answer (spec "Product" rule 3). Top-level tokens only, so a "## " line inside a
// fence, a list item or a quote is part of an answer, never a new question.
import GithubSlugger from 'github-slugger';
import { headingId, parseMarkdown, stripHtmlComments } from './markdown.js';
import { type ContentIssue, headingLevel, headingText, sliceLines, topLevelBlocks } from './tokens.js';

export type { ContentIssue } from './tokens.js';

export interface FaqEntry {
  question: string;
  /** github-slugger id of the question, unique within the FAQ (or the shared slugger). */
  id: string;
  answerMarkdown: string;
  /** 1-based line of the question heading. */
  line: number;
}

export interface FaqOptions {
  /** Share one slugger with the rest of the page so anchors stay unique across documents. */
  slugger?: GithubSlugger;
}


/**
 * Parses a FAQ. HTML comments are removed first (as for the changelog), keeping line numbers.
 * An empty or whitespace-only FAQ is simply no entries; a non-empty one without any question
 * is an error.
 */
export function parseFaq(
  src: string,
  options: FaqOptions = {},
): { entries: FaqEntry[]; errors: ContentIssue[]; warnings: ContentIssue[] } {
  const text = stripHtmlComments(src);
  const errors: ContentIssue[] = [];
  const warnings: ContentIssue[] = [];
  const entries: FaqEntry[] = [];
  if (text.trim() === '') return { entries, errors, warnings };
  const lines = text.split('\n');
  const slugger = options.slugger ?? new GithubSlugger();
  // answerEnd is the end of the last block before the next question, so link reference
  // definitions at the bottom of the FAQ (which make no tokens) stay out of the last answer.
  const questions: { question: string; start: number; end: number; answerEnd: number }[] = [];
  let preambleWarned = false;
  for (const block of topLevelBlocks(parseMarkdown(text))) {
    const level = headingLevel(block);
    const current = questions[questions.length - 1];
    if (level === 2) {
      questions.push({ question: headingText(block), start: block.start, end: block.end, answerEnd: block.end });
      continue;
    }
    if (current) current.answerEnd = block.end;
    if (level === 1) {
      warnings.push({ line: block.start + 1, message: 'a "# " heading in the FAQ; questions are "## " headings' });
    } else if (!current && !preambleWarned) {
      preambleWarned = true;
      warnings.push({ line: block.start + 1, message: 'text before the first "## Question" is not shown' });
    }
  }
  const seen = new Map<string, number>();
  for (const q of questions) {
    const line = q.start + 1;
    const answerMarkdown = sliceLines(lines, q.end, q.answerEnd);
    if (q.question === '') errors.push({ line, message: 'empty "## " question heading' });
    if (answerMarkdown === '') warnings.push({ line, message: `question "${q.question}" has no answer` });
    const first = seen.get(q.question);
    if (first !== undefined) warnings.push({ line, message: `question "${q.question}" repeats line ${first}` });
    else seen.set(q.question, line);
    entries.push({ question: q.question, id: headingId(slugger, q.question), answerMarkdown, line });
  }
  if (entries.length === 0) errors.push({ message: 'the FAQ has no questions: write each question as a "## " heading' });
  return { entries, errors, warnings };
}
