/**
 * Shell constructs the compiler does not model word for word. Where one of them stands, the
 * compiler's idea of the quoting or of the command a placeholder belongs to can differ from the
 * shell's (reviews found each of these), so a template holding one takes no run parameter: the
 * fail-safe answer where the rules cannot see. The values still never enter the shell text and
 * are never split (see reference() in template.ts); what could be missed is a second reading
 * such as `eval`.
 */
const RAW: { test: RegExp | ((t: string) => boolean); what: string }[] = [
  // XCU 2.6.3: inside backquotes a backslash escapes `\`, `` ` `` and `$`, so words change.
  // Between the first and the last backquote: pairs are not matched here (a `'`'` would shift them).
  { test: /`[\s\S]*\\[\s\S]*`/, what: 'a backslash inside backquotes' },
  // XCU 2.3 rule 9: a `#` starting a word is a comment, and `""#` or `\#` starts one.
  { test: (t) => commentAfterQuote(t), what: 'a # right after a closing quote or a backslash' },
  { test: /`[\s\S]*#[\s\S]*`/, what: 'a # inside backquotes' },
  // XCU 2.2.1: a backslash-newline is removed before tokens are read, so `$\⏎(` is `$(` and
  // `<\⏎<` is `<<`. A continuation after a blank (the usual ` \⏎`) joins nothing and is fine.
  { test: /[$<>&|(;`{]\\\n|\\\n[(<>{&|;`]/, what: 'a line continuation inside an operator or a substitution ($\\⏎( or <\\⏎<)' },
  // XCU 2.7.4: the delimiter is the whole word, continued lines included.
  { test: /<<[^\n]*\\\n/, what: 'a here-document line continued with a backslash' },
  // A here-document body starts at the next newline, even one inside a substitution.
  { test: /(?<!<)<<(?!<)[^\n]*(?:\$\(|`)/, what: 'a substitution on the line of a here-document' },
  // The shell separates words at space, tab and newline only; these rules must not see others.
  { test: /[\r\f\v\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/, what: 'a carriage return, form feed or Unicode space (saved with Windows line endings?)' },
  // bash's `$[…]`, `((…))` and `&>`: dash reads quotes inside the first two and `&` as a separator.
  { test: /\$\[/, what: 'bash arithmetic $[…]' },
  { test: /(?:^|[^$(])\(\(/, what: "bash's ((…)) (two subshells to dash)" },
  { test: /&>/, what: "bash's &> (a background & to dash)" },
  // Inside `$((…))` and `${…}` the shell's quoting and nesting rules differ from plain words.
  { test: /\$\(\((?:(?!\)\))[\s\S])*(?:\$\(|`|["'])/, what: 'a substitution or quote inside $((…))' },
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a JavaScript template
  { test: /\$\{[^}]*["']/, what: 'a quote inside ${…}' },
];

/** Read on the words as the shell sees them: continuations joined, quotes and backslashes gone (`al""ias` is `alias`). */
const PLAIN: { test: RegExp | ((t: string) => boolean); what: string }[] = [
  // XCU 2.6.3: a case pattern's `)` does not end the substitution around it.
  { test: (t) => caseInSubstitution(t), what: 'a case command inside $(…) or backquotes' },
  // XCU 2.3.1: an alias makes a later word a command.
  { test: /(?:^|[\s;&|({`!])alias[ \t]+(?:-\S*[ \t]+)*[^\s=]+=/, what: 'an alias definition' },
  // A file descriptor another command can read as a script (`. /dev/fd/3`).
  { test: /^(?:[^\n]*[\s;&|({`!])?exec[ \t][^\n]*<<|^[^\n]*<<[^\n]*[\s;&|({`!]exec(?:[ \t]|$)/m, what: 'a here-document given to exec' },
];

const plain = (template: string) => template.replace(/\\\n/g, '').replace(/["'\\]/g, '');

/** A `#` outside quotes right after a closing quote or a backslash (both start a comment's word). */
function commentAfterQuote(text: string): boolean {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote === "'") {
      if (ch === "'") quote = '';
    } else if (ch === '\\') {
      if (quote === '' && text[i + 1] === '#') return true;
      i++;
    } else if (quote === '"') {
      if (ch === '"') quote = '';
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '#' && (text[i - 1] === '"' || text[i - 1] === "'")) return true;
  }
  return false;
}

/**
 * A `case` command inside `$(…)` or backquotes. Parentheses are counted up to each `case`; a
 * `case` at the top level is skipped to its `esac`, since its patterns' `)` would upset the count.
 */
function caseInSubstitution(text: string): boolean {
  let depth = 0;
  let ticks = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '$' && text[i + 1] === '(') {
      depth++;
      i++;
    } else if (ch === '(' && depth > 0) depth++;
    else if (ch === ')' && depth > 0) depth--;
    else if (ch === '`') ticks = !ticks;
    else if (/^case[ \t\n]/.test(text.slice(i, i + 5)) && (i === 0 || /[\s;&|(`)]/.test(text[i - 1]!))) {
      if (depth > 0 || ticks) return true;
      const end = text.slice(i + 4).search(/(?:^|[\s;&|])esac(?=$|[\s;&|)])/);
      if (end < 0) return false;
      i += 4 + end;
    }
  }
  return false;
}

const hits = (t: string, u: { test: RegExp | ((t: string) => boolean) }) => (typeof u.test === 'function' ? u.test(t) : u.test.test(t));

/** The first construct of the template the placeholder rules do not follow, or null. */
export function unmodelled(source: string): string | null {
  // Placeholders stand for one word each; their names (any characters) are not shell text.
  const template = source.replace(/\{[A-Za-z][A-Za-z0-9]*(?:\.[^{}]+)?\}/g, 'P');
  const hit = RAW.find((u) => hits(template, u));
  if (hit) return hit.what;
  const words = plain(template);
  return PLAIN.find((u) => hits(words, u))?.what ?? null;
}
