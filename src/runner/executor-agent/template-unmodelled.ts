/**
 * Shell constructs the compiler does not model word for word. Where one of them stands, the
 * compiler's idea of the quoting or of the command a placeholder belongs to can differ from the
 * shell's (a review found each of these), so a template holding one takes no run parameter: the
 * fail-safe answer where the rules cannot see. The values still never enter the shell text
 * (they travel in the environment); what could be missed is a second reading such as `eval`.
 */
const RAW: { test: RegExp; what: string }[] = [
  // XCU 2.6.3: inside backquotes a backslash escapes `\`, `` ` `` and `$`, so words change.
  // Between the first and the last backquote: pairs are not matched here (a `'`'` would shift them).
  { test: /`[\s\S]*\\[\s\S]*`/, what: 'a backslash inside backquotes' },
  // XCU 2.3 rule 9: a `#` starting a word is a comment, and `""#` or `\#` starts one.
  { test: /["'\\]#/, what: 'a # right after a quote or backslash' },
  { test: /`[\s\S]*#[\s\S]*`/, what: 'a # inside backquotes' },
  // XCU 2.7.4: the delimiter is the whole word, continued lines included.
  { test: /<<[^\n]*\\\n/, what: 'a here-document line continued with a backslash' },
  // A here-document body starts at the next newline, even one inside a substitution.
  { test: /(?<!<)<<(?!<)[^\n]*(?:\$\(|`)/, what: 'a substitution on the line of a here-document' },
  // bash's `$[…]`, `((…))` and `&>`: dash reads quotes inside the first two and `&` as a separator.
  { test: /\$\[/, what: 'bash arithmetic $[…]' },
  { test: /(?:^|[^$(])\(\(/, what: "bash's ((…)) (two subshells to dash)" },
  { test: /&>/, what: "bash's &> (a background & to dash)" },
];

/** Read on the words as the shell sees them: continuations joined, quotes and backslashes gone (`al""ias` is `alias`). */
const PLAIN: { test: RegExp; what: string }[] = [
  // XCU 2.6.3: a case pattern's `)` does not end the substitution around it.
  { test: /(?:\$\(|`)[\s\S]*\bcase\b/, what: 'a case command inside $(…) or backquotes' },
  // XCU 2.3.1: an alias makes a later word a command.
  { test: /(?:^|[^A-Za-z0-9_.-])alias(?:$|[^A-Za-z0-9_.-])/, what: 'an alias' },
  // A file descriptor another command can read as a script (`. /dev/fd/3`).
  { test: /^[^\n]*(?:\bexec\b[^\n]*<<|<<[^\n]*\bexec\b)/m, what: 'a here-document given to exec' },
];

const plain = (template: string) => template.replace(/\\\n/g, '').replace(/["'\\]/g, '');

/** The first construct of the template the placeholder rules do not follow, or null. */
export function unmodelled(template: string): string | null {
  const hit = RAW.find((u) => u.test.test(template));
  if (hit) return hit.what;
  const words = plain(template);
  return PLAIN.find((u) => u.test.test(words))?.what ?? null;
}
