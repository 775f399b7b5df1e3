/**
 * The operands after a shell's `-c CODE` (`sh -c 'echo "$1"' _ {param.x}`) are the code's `$0`,
 * `$1` …: safe where the code quotes them as data, code again where it runs them (`sh -c '$1' _
 * {param.x}`, `eval "$1"`, `exec "$@"`). The code is read as a template of its own, with a
 * placeholder where it refers to its operands, by the same rules (template.ts): where the rules
 * refuse that placeholder, the operand is read again too.
 */
import type { Reason } from './code-words.js';
import { TemplateError } from './template-env.js';

/** The code's references to its operands: `$1`, `${1}`, `${1:-x}`, `${#1}`, `$@`, `$*`, `$0` (`$$` is the process id). */
const POSITIONAL = /\$\$|\$\{[#!]?(?:[0-9]+|[@*])[^}]*\}|\$[0-9@*]/g;

/** The code with `placeholder` for each reference to an operand, and its own braces kept from reading as placeholders; null when it refers to none. */
function withOperands(code: string, placeholder: string): string | null {
  // `{out}` in the code is text of the code, not a placeholder of this template: `{_out}` reads the same to the rules.
  const own = (text: string) => text.replace(/\{(?=[A-Za-z])/g, '{_');
  let out = '';
  let last = 0;
  let refers = false;
  for (const m of code.matchAll(POSITIONAL)) {
    out += own(code.slice(last, m.index));
    if (m[0] === '$$') out += '$$';
    else {
      out += placeholder;
      refers = true;
    }
    last = m.index + m[0].length;
  }
  return refers ? out + own(code.slice(last)) : null;
}

/** The first clause of a refusal's reason, without the placeholder it names. */
function clause(message: string, placeholder: string): string {
  const text = message.startsWith(`the placeholder ${placeholder} `) ? message.slice(`the placeholder ${placeholder} `.length) : message;
  const end = text.indexOf('; ');
  return end < 0 ? text : text.slice(0, end);
}

/**
 * Why an operand of `sh -c CODE` is read again, by what CODE does with its operands (`compile`
 * is the template compiler), or null. `why` says where the operand stands.
 */
export function operandReading(code: string, why: string, compile: (template: string) => string): Reason | null {
  // As code first (every placeholder refused there), then where a run parameter would choose what runs.
  for (const [placeholder, kind] of [
    ['{out}', 'code'],
    ['{param.operand}', 'chooses'],
  ] as const) {
    const template = withOperands(code, placeholder);
    if (template === null) return null;
    try {
      compile(template);
    } catch (e) {
      if (!(e instanceof TemplateError)) throw e;
      return { kind, why: `${why}, and there it ${clause(e.message, placeholder)}` };
    }
  }
  return null;
}
