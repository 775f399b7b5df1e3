/**
 * Whether a node's `settings.xml` names the factory of a configuration node, looked at in the
 * raw text before anything is parsed (only those files are parsed). It answers what the pattern
 *
 *   key="factory"[^>]*value="[^"]*(?:\.(?:configuration|quickform|dialog)\.|VariableInput)
 *
 * (case-insensitive) answers, in one pass over the text: a backtracking engine tries every
 * `value="` after every `key="factory"`, which is quadratic on a file filled with
 * `key="factory"value="`. Here each character is looked at once, with a bounded look-ahead for
 * the few fixed words (`steps`, when given, counts those looks).
 */

const FACTORY = 'key="factory"';
const VALUE = 'value="';
/** The marks of a configuration node's factory class name. */
const TOKENS = ['.configuration.', '.quickform.', '.dialog.', 'variableinput'];
const GT = 0x3e;
const QUOTE = 0x22;
const DOT = 0x2e;
const V = 0x56;
const K = 0x4b;

export interface Steps {
  count: number;
}

/**
 * Case-insensitive as a JavaScript RegExp with the `i` flag and without `u` folds: ASCII letters
 * only (a character beyond ASCII never equals an ASCII letter under that folding, and these
 * words are ASCII).
 */
function fold(c: number): number {
  return c >= 0x61 && c <= 0x7a ? c - 0x20 : c;
}

/** Whether `word` (lower-case ASCII) stands in `text` at `at`, case-insensitively. */
function at(text: string, index: number, word: string, steps: Steps): boolean {
  if (index + word.length > text.length) return false;
  for (let k = 0; k < word.length; k++) {
    steps.count++;
    if (fold(text.charCodeAt(index + k)) !== fold(word.charCodeAt(k))) return false;
  }
  return true;
}

export function namesConfigurationFactory(text: string, steps: Steps = { count: 0 }): boolean {
  // A `key="factory"` has ended with no `>` since: a `value="` now belongs to its element.
  let armed = false;
  // Where a `key="factory"` that started earlier ends (at most one is pending: the word cannot
  // overlap itself).
  let factoryEnd = -1;
  // Inside the value of a `value="` that follows a factory key, up to its closing quote.
  let watching = false;
  // Where the value of the latest such `value="` starts.
  let valueStart = -1;
  for (let i = 0; i < text.length; i++) {
    steps.count++;
    if (i === factoryEnd) {
      armed = true;
      factoryEnd = -1;
    }
    if (i === valueStart) {
      watching = true;
      valueStart = -1;
    }
    const c = text.charCodeAt(i);
    const f = fold(c);
    if (watching) {
      if (c === QUOTE) watching = false;
      else if ((c === DOT || f === V) && TOKENS.some((t) => at(text, i, t, steps))) return true;
    }
    if (c === GT) armed = false;
    // `[^>]*` between the key and `value="`: `value="` itself holds no `>`, so being armed
    // where it starts is enough. Its own quote ends any value being watched (above).
    if (f === V && armed && at(text, i, VALUE, steps)) valueStart = i + VALUE.length;
    if (f === K && factoryEnd < 0 && at(text, i, FACTORY, steps)) factoryEnd = i + FACTORY.length;
  }
  return false;
}
