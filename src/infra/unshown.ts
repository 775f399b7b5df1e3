/**
 * Characters a text shown to people may not hold: C0 and C1 controls and the bidirectional
 * formatting characters (Unicode TR9 §2: U+061C, U+200E/F, U+202A–E, U+2066–9), with which a
 * name such as U+202E + `fwnk.gpj` reads as `jpg.knwf`. One rule for schemas, parsers and cleaners.
 */
export const UNSHOWN = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';

/** Whether `text` holds any of UNSHOWN. */
export const hasUnshown = (text: string): boolean => UNSHOWN_ONE.test(text);

const UNSHOWN_ONE = new RegExp(`[${UNSHOWN}]`);
const UNSHOWN_ALL = new RegExp(`[${UNSHOWN}]`, 'g');
/** UNSHOWN without tab and line feed, which a longer text may keep as layout. */
const UNSHOWN_BUT_LAYOUT = new RegExp(`[${UNSHOWN.replace('\\u0000-\\u001f', '\\u0000-\\u0008\\u000b-\\u001f')}]`, 'g');

/** `text` without UNSHOWN characters; `keepLayout` keeps tabs and line feeds. */
export function withoutUnshown(text: string, keepLayout = false): string {
  return text.replace(keepLayout ? UNSHOWN_BUT_LAYOUT : UNSHOWN_ALL, '');
}
