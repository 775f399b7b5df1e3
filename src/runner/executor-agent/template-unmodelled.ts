/**
 * Shell constructs the compiler does not model word for word. Where one of them stands, the
 * compiler's idea of the quoting or of the command a placeholder belongs to can differ from the
 * shell's (a review found each of these): a case pattern's `)` inside `$(…)` (XCU 2.6.3 ends
 * the substitution only after the whole case), a backquote escaped inside backquotes (a nested
 * substitution, XCU 2.6.3), a `#` after quotes or inside backquotes (XCU 2.3 rule 9: a comment
 * starts a word, and `""#` is a word), a here-document delimiter continued on the next line
 * (XCU 2.7.4), aliases (XCU 2.3.1: a later word becomes a command) and a here-document given to
 * `exec` (a file descriptor another command can source). A template holding one of them takes
 * no run parameter: the fail-safe answer where the rules cannot see.
 */
const UNMODELLED: { test: RegExp; what: string }[] = [
  { test: /\$\((?:[\s\S]*[\s;&|(`])?case[\s\\]/, what: 'a case command inside $(…)' },
  { test: /`[^`]*\\`/, what: 'a backquote escaped inside backquotes' },
  { test: /["'\\]#/, what: 'a # right after a quote or backslash' },
  { test: /`[^`]*#/, what: 'a # inside backquotes' },
  { test: /<<[^\n]*\\\n/, what: 'a here-document line continued with a backslash' },
  { test: /(?:^|[^A-Za-z0-9_.-])alias(?:$|[^A-Za-z0-9_.-])/, what: 'an alias' },
  { test: /(?:^|[\s;&|({`])exec\b[^\n]*<</, what: 'a here-document given to exec' },
];

export function unmodelled(template: string): string | null {
  return UNMODELLED.find((u) => u.test.test(template))?.what ?? null;
}
