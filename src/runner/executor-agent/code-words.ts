/**
 * The words of one simple command as the template compiler hands them to the checks of second
 * readings (code-arguments.ts and its tables): quotes removed, each placeholder a MARK, each
 * redirection operator a token starting with OP; and what a check answers.
 */

/** Stands for a placeholder inside a word being read (never a character of shell text). */
export const MARK = '\u0000';
/** Starts a redirection operator token (`OP + '<<<'`, `OP + '>'` …); the next word is its target. */
export const OP = '\u0001';

/**
 * Why a word is read again: `code` refuses every placeholder; `chooses` only run parameters (a
 * value there picks what runs); `operand` is an operand after a shell's `-c CODE`, which that
 * code reads as `$0`, `$1` … (`code` holds it: template.ts reads it in turn).
 */
export type Reason = { kind: 'code' | 'chooses'; why: string } | { kind: 'operand'; why: string; code: string };
