/**
 * The values a declared parameter takes, as strictly as the platform reads them. A configuration
 * node's settings entry type says the Java type of its value: `xint` is a 32-bit int, `xshort`
 * 16-bit, `xlong` 64-bit, `xdouble`/`xfloat` floating point (Java Language Specification §4.2.1,
 * §4.2.3). The batch executor reads a `-workflow.variable` value with `Integer.parseInt` or
 * `Double.parseDouble`, which take decimal digits only: no `0x`/`0b`/`0o` prefix, no `Infinity`
 * or `NaN` (for a double, `Double.parseDouble` reads `0x10p0` as hex; that form is refused too,
 * since a run's value must mean the same number to every reader).
 *
 * A long is accepted within ±(2^53 − 1) only, the integers a JSON number (and so the API, MCP and
 * the web form) holds exactly (RFC 8259 §6); a string of digits is held to the same range.
 */

export interface IntegerRange {
  minimum: number;
  maximum: number;
}

/** The range of each integer entry type of a node's settings. */
export const INTEGER_RANGES: Readonly<Record<'xint' | 'xshort' | 'xlong', IntegerRange>> = {
  xshort: { minimum: -32768, maximum: 32767 },
  xint: { minimum: -2147483648, maximum: 2147483647 },
  xlong: { minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
};

/** The largest finite float (Float.MAX_VALUE): a value past it is infinite as an `xfloat`. */
export const FLOAT_MAXIMUM = 3.4028234663852886e38;

/** An integer range not recorded (versions read before ranges were kept): the widest, a long's. */
export const DEFAULT_INTEGER_RANGE = INTEGER_RANGES.xlong;

/** Decimal integer syntax as `Long.parseLong` takes it (an optional sign, digits); length bounded. */
const INTEGER = /^[+-]?\d{1,40}$/;
/** Decimal floating-point syntax `Double.parseDouble` takes, without hex, `Infinity`, `NaN` or a d/f suffix. */
const DECIMAL = /^[+-]?(?:\d{1,400}(?:\.\d{0,400})?|\.\d{1,400})(?:[eE][+-]?\d{1,5})?$/;

/** The integer `v` stands for (a JSON number or a string of decimal digits) within the range, or null. */
export function integerValue(v: unknown, range: IntegerRange): number | null {
  if (typeof v === 'number') return Number.isInteger(v) && v >= range.minimum && v <= range.maximum ? v : null;
  if (typeof v !== 'string' || !INTEGER.test(v)) return null;
  // BigInt compares exactly however many digits (leading zeros included) the string has.
  const n = BigInt(v);
  return n >= BigInt(range.minimum) && n <= BigInt(range.maximum) ? Number(n) : null;
}

/** The finite number `v` stands for (a JSON number or a decimal string), within ±maximum when given, or null. */
export function numberValue(v: unknown, maximum = Number.MAX_VALUE): number | null {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && DECIMAL.test(v)) n = Number(v);
  else return null;
  return Number.isFinite(n) && Math.abs(n) <= maximum ? n : null;
}
