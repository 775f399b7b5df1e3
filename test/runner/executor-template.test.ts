// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell text, where ${…} is the shell's own expansion
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { compileTemplate, parameterEnvName, type TemplateValues, TemplateError, templateEnv } from '../../src/runner/executor-agent/template.js';
import { tempDir } from '../helpers/db.js';

const values: TemplateValues = { archive: '/w/a.knwf', workDir: '/w', workflowDir: '/w/workflow', outDir: '/w/out', runId: 'r1', attempt: '2', parameters: {} };

const scratch = tempDir('pier-template-');
/** Hostile values create files here; nothing may ever appear. */
const canary = path.join(scratch, 'canary');
const cwd = path.join(scratch, 'cwd');
fs.mkdirSync(canary);
fs.mkdirSync(cwd);
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** Runs a compiled template with /bin/sh as the executor does: values only in the environment. */
function sh(template: string, v: TemplateValues): Buffer {
  return execFileSync('/bin/sh', ['-c', compileTemplate(template)], { env: { PATH: process.env.PATH, ...templateEnv(v) }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** No lone surrogate halves (they cannot be passed as UTF-8). */
const wellFormed = (s: string) => Buffer.from(s, 'utf8').toString('utf8') === s;

/** Text a shell could take for syntax, with commands that would leave a file in the canary directory. */
const HOSTILE = [
  "'",
  '"',
  '`',
  '$(',
  ')',
  '${',
  '}',
  '$((',
  '\\',
  '\n',
  ';',
  '&',
  '|',
  '*',
  '?',
  ' ',
  '\t',
  '#',
  'EOF',
  '\nEOF\n',
  '$HOME',
  '$1',
  `$(touch ${canary}/dollar)`,
  `\`touch ${canary}/backtick\``,
  `'; touch ${canary}/sq; '`,
  `"; touch ${canary}/dq; "`,
  `\ntouch ${canary}/newline\n`,
  `')"; touch ${canary}/mixed; #`,
];

const value = fc
  .oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.array(fc.constantFrom(...HOSTILE), { maxLength: 8 }).map((a) => a.join('')))
  // Environment values are C strings (no NUL) and are passed as UTF-8.
  .filter((s) => !s.includes('\u0000') && wellFormed(s));

/** A placeholder with the values that fill it: a run parameter of any name, or a simple one. */
const placeholder = fc.oneof(
  fc
    .string({ minLength: 1, maxLength: 12, unit: 'binary' })
    .filter((n) => !/[{}]/.test(n) && !n.includes('\u0000') && wellFormed(n))
    .chain((name) => value.map((v) => ({ text: `{param.${name}}`, v, values: { ...values, parameters: { [name]: v } } }))),
  fc.constantFrom(['archive', 'archive'], ['workdir', 'workDir'], ['workflow', 'workflowDir'], ['out', 'outDir'], ['runId', 'runId'], ['attempt', 'attempt']).chain(([key, field]) =>
    value.map((v) => ({ text: `{${key}}`, v, values: { ...values, [field]: v } })),
  ),
);

/** Every quoting context a placeholder may stand in: the template and what it prints for value `v`. */
const CONTEXTS: { name: string; template: (p: string) => string; expect: (v: string) => string }[] = [
  { name: 'bare', template: (p) => `printf '%s' ${p}`, expect: (v) => v },
  { name: 'inside a word', template: (p) => `printf '%s' a"b"'c'${p}'d'`, expect: (v) => `abc${v}d` },
  { name: 'double quotes', template: (p) => `printf '%s' "a ${p} b"`, expect: (v) => `a ${v} b` },
  { name: 'backticks', template: (p) => `printf '%s' "\`printf '%s.' ${p}\`"`, expect: (v) => `${v}.` },
  { name: '$( ) in double quotes', template: (p) => `printf '%s' "$(printf '%s.' ${p})"`, expect: (v) => `${v}.` },
  { name: 'double quotes in $( )', template: (p) => `printf '%s' "$(printf '%s.' "x${p}")"`, expect: (v) => `x${v}.` },
  { name: 'nested $( )', template: (p) => `printf '%s' $(printf '%s' "$(printf '%s' "${p}" | od -An -tx1 | tr -d ' \\n')")`, expect: (v) => Buffer.from(v).toString('hex') },
  { name: 'an argument after sh -c', template: (p) => `sh -c 'printf "%s" "$1"' _ ${p}`, expect: (v) => v },
  { name: 'after an escaped blank and #', template: (p) => `printf '%s' a\\ #${p}`, expect: (v) => `a #${v}` },
  { name: 'here-document', template: (p) => `cat <<EOF\nbefore ${p} after\nEOF`, expect: (v) => `before ${v} after\n` },
  { name: 'here-document <<-', template: (p) => `cat <<-END\n\t${p}\n\tEND`, expect: (v) => `${v}\n` },
  { name: 'after a here-document', template: (p) => `cat <<'EOF'\n'"\nEOF\nprintf '%s' ${p}`, expect: (v) => `'"\n${v}` },
  { name: 'case', template: (p) => `case ${p} in *) printf '%s' "${p}";; esac`, expect: (v) => v },
  { name: 'after a comment', template: (p) => `# it's a "comment" {nope\nprintf '%s' ${p}`, expect: (v) => v },
];

describe('executor command template', () => {
  test('placeholders become references to environment variables, quoted for where they stand', () => {
    assert.equal(
      compileTemplate('knime -batch {archive} -dest {out}/x -run {runId}#{attempt} {param.rows}'),
      'knime -batch "${PIER_ARCHIVE}" -dest "${PIER_OUT_DIR}"/x -run "${PIER_RUN_ID}"#"${PIER_ATTEMPT}" "${PIER_PARAM_rows}"',
    );
    assert.equal(compileTemplate('echo "v={param.x}"'), 'echo "v=${PIER_PARAM_x}"');
    assert.equal(compileTemplate('echo ${HOME} {param.a b}'), 'echo ${HOME} "${PIER_PARAMX_612062}"');
    assert.equal(parameterEnvName('rows'), 'PIER_PARAM_rows');
    assert.equal(parameterEnvName('a-b'), 'PIER_PARAMX_612d62');
    assert.deepEqual(templateEnv({ ...values, parameters: { rows: 5, off: false, none: null } }), {
      PIER_PARAM_rows: '5',
      PIER_PARAM_off: 'false',
      PIER_PARAM_none: '',
      PIER_ARCHIVE: '/w/a.knwf',
      PIER_WORK_DIR: '/w',
      PIER_WORKFLOW_DIR: '/w/workflow',
      PIER_OUT_DIR: '/w/out',
      PIER_RUN_ID: 'r1',
      PIER_ATTEMPT: '2',
    });
    // A missing parameter is the empty string.
    assert.equal(sh("printf '[%s]' {param.missing}", values).toString(), '[]');
  });

  test('refused at start, naming the placeholder: unknown ones, after a backslash, in $((…)), in a quoted here-document', () => {
    assert.throws(() => compileTemplate('echo {nope}'), (e: Error) => e instanceof TemplateError && /unknown placeholder \{nope\}/.test(e.message));
    assert.throws(() => compileTemplate('echo \\{out}'), /\{out\} follows a backslash/);
    assert.throws(() => compileTemplate('echo $(( {attempt} + 1 ))'), /\{attempt\} stands inside \$\(\(/);
    assert.throws(() => compileTemplate("cat <<'EOF'\n{param.x}\nEOF"), /\{param\.x\} stands inside a here-document with a quoted delimiter/);
    assert.throws(() => compileTemplate('cat <<\\EOF\n{out}\nEOF'), /quoted delimiter/);
  });

  test('refused where the text would be read again as code or arithmetic, naming the placeholder and why', () => {
    const refused: [string, RegExp][] = [
      ["echo 'v={param.x}'", /\{param\.x\} stands inside '…'/],
      ["trap 'echo {param.x}' EXIT", /stands inside '…'/],
      ['trap "echo {param.x}" EXIT', /argument of trap/],
      ['sh -c "echo {param.x}"', /code argument of sh -c/],
      ['/bin/bash -lc "echo {out}"', /code argument of bash -lc/],
      ['sudo -u knime sh -c "x={param.x}"', /code argument of sh -c/],
      ['python3 -c "print(\'{param.x}\')"', /code argument of python3 -c/],
      ['perl -e "print {param.x}"', /code argument of perl -e/],
      ['sh -c "$(echo {param.x})"', /code argument of sh -c/],
      ['sh -c "`echo {param.x}`"', /code argument of sh -c/],
      ['eval "echo {param.x}"', /argument of eval/],
      ['eval echo $(printf %s {param.x})', /argument of eval/],
      ['ssh host echo {param.x}', /argument of ssh/],
      ['su knime -c "run {param.x}"', /argument of su/],
      ['runuser -u knime -c "run {param.x}"', /argument of runuser/],
      ['awk -v v={param.x} "BEGIN{print v}"', /argument of awk/],
      ['sh <<EOF\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['python3 - <<EOF\nprint("{param.x}")\nEOF', /here-document that python3 reads as code/],
      ['cat <<EOF\n$(( {param.x} + 1 ))\nEOF', /inside \$\(…\), `…`, \$\(\(…\)\) or \$\{…\} in a here-document/],
      ["cat <<EOF\n$(printf '%s' '{param.x}')\nEOF", /in a here-document/],
      ['cat <<EOF\n`echo {param.x}`\nEOF', /in a here-document/],
      ['(( {param.n} > 3 ))', /\(\(…\)\): its value would be evaluated as arithmetic/],
      ['[[ {param.n} -gt 3 ]] && echo big', /inside \[\[ … \]\]/],
      ['let n={param.n}+1', /argument of let/],
      ['declare -i n={param.n}', /argument of declare/],
      ['a[{param.n}]=1', /array subscript/],
      ['echo "${s:{param.n}}"', /inside \$\{…\}/],
      ['echo "${y#{param.x}}"', /inside \$\{…\}/],
      ['echo ${y:-{param.x}}', /inside \$\{…\}/],
    ];
    for (const [template, why] of refused) {
      assert.throws(
        () => compileTemplate(template),
        (e: Error) => e instanceof TemplateError && /the placeholder \{(param\.[xn]|out)\}/.test(e.message) && why.test(e.message),
        template,
      );
    }
    // Values as arguments after the code, or in the environment, are what the refusals advise.
    assert.equal(compileTemplate(`sh -c 'echo "$1"' _ {param.x}`), `sh -c 'echo "$1"' _ "\${PIER_PARAM_x}"`);
    assert.equal(compileTemplate(`trap 'echo "$PIER_PARAM_x"' EXIT; echo {param.x}`), `trap 'echo "$PIER_PARAM_x"' EXIT; echo "\${PIER_PARAM_x}"`);
    assert.equal(compileTemplate('[[ -f x ]] && echo {out}'), '[[ -f x ]] && echo "${PIER_OUT_DIR}"');
    assert.equal(compileTemplate('sh run.sh {out} <<EOF\n{param.x}\nEOF'), 'sh run.sh "${PIER_OUT_DIR}" <<EOF\n${PIER_PARAM_x}\nEOF');
  });

  test('where /bin/sh is bash, nothing left compiles into arithmetic that runs a value', { skip: !fs.existsSync('/bin/bash') && 'no bash' }, () => {
    const hostile = `a[$(touch ${canary}/bash)]`;
    for (const template of ['test {param.n} -gt 3', '[ {param.n} -eq 3 ]', 'echo $(( 1 + 2 )) {param.n}', 'printf %d {param.n}', 'case {param.n} in 1) ;; esac', 'x={param.n}; echo "$x"']) {
      spawnSync('/bin/bash', ['-c', compileTemplate(template)], { env: { PATH: process.env.PATH, ...templateEnv({ ...values, parameters: { n: hostile } }) }, cwd, stdio: 'ignore' });
      assert.deepEqual(fs.readdirSync(canary), [], template);
    }
  });

  test('property: templates that hand text to a second reader (sh -c, bash -c, eval, trap) never run a value', () => {
    const piece = fc.constantFrom('sh -c ', 'bash -c ', 'eval ', 'trap ', "'", '"', '`', '$(', ')', ' ', ';', '\n', '_ ', 'echo ', '{param.v}', '<<EOF\n', 'EOF\n', 'x');
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 12 }), value, (pieces, v) => {
        const template = pieces.join('');
        let compiled: string;
        try {
          compiled = compileTemplate(template);
        } catch (e) {
          if (e instanceof TemplateError) return;
          throw e;
        }
        spawnSync('/bin/sh', ['-c', compiled], { env: { PATH: process.env.PATH, ...templateEnv({ ...values, parameters: { v } }) }, cwd, stdio: 'ignore', timeout: 10_000 });
        assert.deepEqual(fs.readdirSync(canary), [], `${JSON.stringify(template)} with ${JSON.stringify(v)}`);
      }),
      { numRuns: 300 },
    );
  });

  for (const ctx of CONTEXTS) {
    test(`property (${ctx.name}): the value arrives byte for byte and runs nothing`, () => {
      fc.assert(
        fc.property(placeholder, (p) => {
          const out = sh(ctx.template(p.text), p.values);
          assert.deepEqual(out, Buffer.from(ctx.expect(p.v)), `${JSON.stringify(ctx.template(p.text))} with ${JSON.stringify(p.v)}`);
          assert.deepEqual(fs.readdirSync(canary), []);
        }),
        { numRuns: 40 },
      );
    });
  }

  test('property: whatever the template, a value never runs as a command (templates made of shell syntax and placeholders)', () => {
    const piece = fc.constantFrom("'", '"', '`', '$(', ')', '(', '${', '}', '$((', '))', '\\', '\n', ';', '|', '&&', ' ', '#', '<<EOF\n', '<<-EOF\n', "<<'EOF'\n", 'EOF\n', 'echo ', 'printf %s ', 'x', '=', '{param.v}', '{out}', '$');
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 14 }), value, (pieces, v) => {
        const template = pieces.join('');
        let compiled: string;
        try {
          compiled = compileTemplate(template);
        } catch (e) {
          if (e instanceof TemplateError) return;
          throw e;
        }
        // Syntax errors are fine: only what the value makes the shell do matters.
        spawnSync('/bin/sh', ['-c', compiled], { env: { PATH: process.env.PATH, ...templateEnv({ ...values, outDir: v, parameters: { v } }) }, cwd, stdio: 'ignore', timeout: 10_000 });
        assert.deepEqual(fs.readdirSync(canary), [], `${JSON.stringify(template)} with ${JSON.stringify(v)}`);
      }),
      { numRuns: 300 },
    );
  });
});
