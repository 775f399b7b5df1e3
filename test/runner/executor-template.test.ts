// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell text, where ${…} is the shell's own expansion
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { compileTemplate, parameterEnvName, parameterNames, type TemplateValues, TemplateError, templateEnv } from '../../src/runner/executor-agent/template.js';
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
  { name: 'an argument after sh -ec -- code', template: (p) => `sh -ec -- 'printf "%s" "$1"' _ ${p}`, expect: (v) => v },
  { name: 'an argument after perl -e code', template: (p) => `perl -e 'print $ARGV[0]' -- ${p}`, expect: (v) => v },
  { name: 'behind wrappers', template: (p) => `timeout 5 nice -n 1 env A=${p} sh -c 'printf "%s|%s" "$A" "$1"' _ ${p}`, expect: (v) => `${v}|${v}` },
  { name: 'redirections and an assignment before the program', template: (p) => `2>/dev/null A=1 </dev/null printf '%s' ${p}`, expect: (v) => v },
  { name: 'here-document to a group without an interpreter', template: (p) => `{ cat; } <<EOF\n${p}\nEOF`, expect: (v) => `${v}\n` },
  { name: 'here-document inside $( )', template: (p) => `printf '%s' "$(cat <<EOF\n${p}\nEOF\n)"`, expect: (v) => v.replace(/\n+$/, '') },
  { name: 'next to nested arithmetic in a here-document', template: (p) => `cat <<EOF\n$(( (1) + 2 )) ${p}\nEOF`, expect: (v) => `3 ${v}\n` },
];

describe('executor command template', () => {
  test('placeholders become references to environment variables, quoted for where they stand', () => {
    assert.equal(
      compileTemplate('knime -batch {archive} -dest {out}/x -run {runId}#{attempt} {param.rows}'),
      'knime -batch ${PIER_ARCHIVE+"$PIER_ARCHIVE"} -dest ${PIER_OUT_DIR+"$PIER_OUT_DIR"}/x -run ${PIER_RUN_ID+"$PIER_RUN_ID"}#${PIER_ATTEMPT+"$PIER_ATTEMPT"} ${PIER_PARAM_rows+"$PIER_PARAM_rows"}',
    );
    assert.equal(compileTemplate('echo "v={param.x}"'), 'echo "v=${PIER_PARAM_x+"$PIER_PARAM_x"}"');
    assert.equal(compileTemplate('echo ${HOME} {param.a b}'), 'echo ${HOME} ${PIER_PARAMX_612062+"$PIER_PARAMX_612062"}');
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
      ['cat <<EOF\n$(( {param.x} + 1 ))\nEOF', /inside \$\(…\), `…`, \$\(\(…\)\), \$\[…\] or \$\{…\} in a here-document/],
      ["cat <<EOF\n$(printf '%s' '{param.x}')\nEOF", /in a here-document/],
      ['cat <<EOF\n`echo {param.x}`\nEOF', /in a here-document/],
      ['(( {param.n} > 3 ))', /\(\(…\)\): its value would be evaluated as arithmetic/],
      ['[[ {param.n} -gt 3 ]] && echo big', /inside \[\[ … \]\]/],
      ['let n={param.n}+1', /argument of let/],
      ['declare -i n={param.n}', /integer attribute/],
      ['declare n={param.n}', /argument of declare/],
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
    assert.equal(compileTemplate(`sh -c 'echo "$1"' _ {param.x}`), `sh -c 'echo "$1"' _ \${PIER_PARAM_x+"$PIER_PARAM_x"}`);
    assert.equal(compileTemplate(`trap 'echo "$PIER_PARAM_x"' EXIT; echo {param.x}`), `trap 'echo "$PIER_PARAM_x"' EXIT; echo \${PIER_PARAM_x+"$PIER_PARAM_x"}`);
    assert.equal(compileTemplate('[[ -f x ]] && echo {out}'), '[[ -f x ]] && echo ${PIER_OUT_DIR+"$PIER_OUT_DIR"}');
    assert.equal(compileTemplate('./run.sh {out} <<EOF\n{param.x}\nEOF'), './run.sh ${PIER_OUT_DIR+"$PIER_OUT_DIR"} <<EOF\n${PIER_PARAM_x+"$PIER_PARAM_x"}\nEOF');
  });

  /** Each template must be refused, naming its placeholder, with a reason matching `why`. */
  const refusedAll = (cases: [string, RegExp][]) => {
    for (const [template, why] of cases) {
      assert.throws(
        () => compileTemplate(template),
        (e: Error) => e instanceof TemplateError && /the placeholder \{(param\.[xn]|out)\}/.test(e.message) && why.test(e.message),
        template,
      );
    }
  };

  test('the code argument of sh/bash/dash/zsh/ksh -c is found wherever it stands: options and -- around -c, clusters, valued options', () => {
    refusedAll([
      ['sh -c -- "echo {param.x}"', /code argument of sh -c/],
      ['bash -c -u "echo {param.x}"', /code argument of bash -c/],
      ['bash -e -c "echo {param.x}"', /code argument of bash -c/],
      ['sh -ec "echo {param.x}"', /code argument of sh -ec/],
      ['bash -xc "echo {param.x}"', /code argument of bash -xc/],
      ['bash -lc -- "echo {out}"', /code argument of bash -lc/],
      ['bash -o errexit -c "echo {param.x}"', /code argument of bash -c/],
      ['sh -c -o errexit "echo {param.x}"', /code argument of sh -c/],
      ['bash --norc -O extglob -c "echo {param.x}"', /code argument of bash -c/],
      ['dash -c "echo {param.x}"', /code argument of dash -c/],
      ['zsh -c "echo {param.x}"', /code argument of zsh -c/],
      ['ksh -c "echo {param.x}"', /code argument of ksh -c/],
      ['sh {param.x} "echo hi"', /names the script sh runs/],
      ['sh -{param.x} "echo hi"', /options of sh|names the script/],
    ]);
    // After the code: $0 and the arguments, which the code reads as "$1".
    assert.equal(compileTemplate(`sh -ec -- 'echo "$1"' _ {param.x}`), `sh -ec -- 'echo "$1"' _ \${PIER_PARAM_x+"$PIER_PARAM_x"}`);
    assert.equal(compileTemplate(`bash -o errexit -c 'echo "$1"' _ {param.x}`), `bash -o errexit -c 'echo "$1"' _ \${PIER_PARAM_x+"$PIER_PARAM_x"}`);
    assert.equal(compileTemplate('sh {workflow}/run.sh {param.x}'), 'sh ${PIER_WORKFLOW_DIR+"$PIER_WORKFLOW_DIR"}/run.sh ${PIER_PARAM_x+"$PIER_PARAM_x"}');
  });

  test('the code options of common interpreters come from a table: perl -E, node -p/--print/--eval, python -c variants, ruby -e, php -r, Rscript -e, osascript -e, sed scripts', () => {
    refusedAll([
      ['perl -E "say {param.x}"', /code argument of perl -E/],
      ['perl -lne "print {param.x}"', /code argument of perl -lne/],
      ["perl -e'print {param.x}'", /stands inside '…'|code argument of perl -e/],
      ['perl -e"print {param.x}"', /code argument of perl -e/],
      ['perl -I lib -e "print {param.x}"', /code argument of perl -e/],
      ['node -p "{param.x}"', /code argument of node -p/],
      ['node --print "{param.x}"', /code argument of node --print/],
      ['node --eval "{param.x}"', /code argument of node --eval/],
      ['node --eval="{param.x}"', /code argument of node --eval/],
      ['node -pe "{param.x}"', /code argument of node -pe/],
      ['node --require ./x -e "{param.x}"', /code argument of node -e/],
      ['/usr/bin/python3.11 -c "print({param.x})"', /code argument of python3\.11 -c/],
      ['python3 -Bc "print({param.x})"', /code argument of python3 -Bc/],
      ['python3 -c"print({param.x})"', /code argument of python3 -c/],
      ['python -W ignore -c "print({param.x})"', /code argument of python -c/],
      ['pypy3 -u -c "print({param.x})"', /code argument of pypy3 -c/],
      ['ruby -e "puts {param.x}"', /code argument of ruby -e/],
      ['php -r "echo {param.x};"', /code argument of php -r/],
      ['Rscript -e "print({param.x})"', /code argument of Rscript -e/],
      ['osascript -e "say {param.x}"', /code argument of osascript -e/],
      ['lua -e "print({param.x})"', /code argument of lua -e/],
      ['pwsh -Command "echo {param.x}"', /code argument of pwsh -command/],
      ['sed "s/a/{param.x}/"', /code argument of sed/],
      ['sed -n -e "s/a/{param.x}/p" f', /code argument of sed -e/],
      ['python3 {param.x}', /names the program python3 runs/],
      ['python3 -{param.x} script.py', /options of python3/],
    ]);
    assert.equal(compileTemplate(`python3 -c 'import sys; print(sys.argv[1])' {param.x}`), `python3 -c 'import sys; print(sys.argv[1])' \${PIER_PARAM_x+"$PIER_PARAM_x"}`);
    assert.equal(compileTemplate('python3 {workflow}/x.py --rows {param.x}'), 'python3 ${PIER_WORKFLOW_DIR+"$PIER_WORKFLOW_DIR"}/x.py --rows ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('perl -ne "print" {param.x}'), 'perl -ne "print" ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('sed -e s/a/b/ {param.x}'), 'sed -e s/a/b/ ${PIER_PARAM_x+"$PIER_PARAM_x"}');
  });

  test('wrappers that run the rest of their arguments are looked through; programs that hand an argument to a shell are refused', () => {
    refusedAll([
      ['script -q -c "echo {param.x}" /dev/null', /code argument of script -c/],
      ['flock /tmp/lock -c "echo {param.x}"', /code argument of flock -c/],
      ['env -S "echo {param.x}"', /code argument of env -S/],
      ['env -i A=1 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['su -c "echo {param.x}" knime', /argument of su/],
      ['runuser knime -c "echo {param.x}"', /argument of runuser/],
      ['runuser -u knime -- sh -c "echo {param.x}"', /code argument of sh -c/],
      ['sudo sh -c "echo {param.x}"', /code argument of sh -c/],
      ['sudo -s echo {param.x}', /argument of sudo with a shell option/],
      ['xargs sh -c "echo {param.x}"', /code argument of sh -c/],
      ['xargs -n 1 -I {} sh -c "echo {param.x}"', /code argument of sh -c/],
      ['nohup sh -c "echo {param.x}"', /code argument of sh -c/],
      ['timeout 5 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['timeout --signal KILL -k 3 5 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['timeout --preserve-status --frob 1 5 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['nice sh -c "echo {param.x}"', /code argument of sh -c/],
      ['nice -n 5 ionice -c 3 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['setsid sh -c "echo {param.x}"', /code argument of sh -c/],
      ['stdbuf -oL -eL sh -c "echo {param.x}"', /code argument of sh -c/],
      ['chroot / sh -c "echo {param.x}"', /code argument of sh -c/],
      ['watch echo {param.x}', /argument of watch/],
      ['parallel echo ::: {param.x}', /argument of parallel/],
      ['ssh -p 22 host echo {param.x}', /argument of ssh/],
      ['tmux new-session -d "echo {param.x}"', /argument of tmux/],
      ['screen -dm sh -c "echo {param.x}"', /argument of screen/],
      ['find . -name x -exec sh -c "echo {param.x}" \\;', /code argument of sh -c/],
      ['timeout {param.x} knime', /operand of timeout/],
      ['sudo -u {param.x} knime', /value of sudo -u/],
    ]);
    assert.equal(compileTemplate('timeout 5 knime -data {param.x}'), 'timeout 5 knime -data ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('sudo -u knime sh {workflow}/run.sh {param.x}'), 'sudo -u knime sh ${PIER_WORKFLOW_DIR+"$PIER_WORKFLOW_DIR"}/run.sh ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('env A={param.x} knime'), 'env A=${PIER_PARAM_x+"$PIER_PARAM_x"} knime');
  });

  test('a here-document or here-string given to a shell or interpreter is code, whatever its other arguments, redirections first or a group around it', () => {
    refusedAll([
      ['sh -s arg <<EOF\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['sh /dev/stdin <<EOF\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['sh 0<<EOF\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['sh run.sh <<EOF\n{param.x}\nEOF', /here-document that sh reads as code/],
      ['. /dev/stdin <<EOF\necho {param.x}\nEOF', /here-document that \. reads as code/],
      ['source /dev/stdin <<EOF\necho {param.x}\nEOF', /here-document that source reads as code/],
      ['<<EOF sh\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['<<EOF sudo -u knime bash -s\necho {param.x}\nEOF', /here-document that bash reads as code/],
      ['{ sh; } <<EOF\necho {param.x}\nEOF', /compound command/],
      ['( sh ) <<EOF\necho {param.x}\nEOF', /compound command/],
      ['while read l; do sh -c "$l"; done <<EOF\n{param.x}\nEOF', /compound command/],
      ['if true; then python3; fi <<EOF\n{param.x}\nEOF', /compound command/],
      ['bash <<< "echo {param.x}"', /here-string that bash reads as code/],
      ['<<< {param.x} bash', /here-string that bash reads as code/],
      ['cat <<EOF | sh -c "$(cat)" && sh <<END\nx\nEOF\n{param.x}\nEND', /here-document that sh reads as code/],
      ['at now <<EOF\necho {param.x}\nEOF', /here-document that at reads as code/],
      ['$SHELL <<EOF\necho {param.x}\nEOF', /here-document that \$SHELL reads as code/],
    ]);
    assert.equal(compileTemplate('{ cat; } <<EOF\n{param.x}\nEOF'), '{ cat; } <<EOF\n${PIER_PARAM_x+"$PIER_PARAM_x"}\nEOF');
    assert.equal(compileTemplate('while read l; do echo "$l"; done <<EOF\n{param.x}\nEOF'), 'while read l; do echo "$l"; done <<EOF\n${PIER_PARAM_x+"$PIER_PARAM_x"}\nEOF');
  });

  test('parser: nested parentheses inside $(( )) in a here-document, and <<< is a here-string, not a here-document', () => {
    refusedAll([
      ['cat <<EOF\n$(( (1) + {param.x} ))\nEOF', /in a here-document/],
      ['cat <<EOF\n$(echo ")" {param.x})\nEOF', /in a here-document/],
      ['cat <<EOF\n$[1 + {param.x}]\nEOF', /in a here-document/],
      ['cat <<< hello\nsh -c "echo {param.x}"', /code argument of sh -c/],
      ['cat <<<hello\neval {param.x}', /argument of eval/],
    ]);
    assert.equal(compileTemplate('cat <<< {param.x}'), 'cat <<< ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('cat <<EOF\n$(( (1) + 2 )) {param.x}\nEOF'), 'cat <<EOF\n$(( (1) + 2 )) ${PIER_PARAM_x+"$PIER_PARAM_x"}\nEOF');
  });

  test('bash arithmetic: $[…], integer variables (declare -i, typeset -i, local -i, export -i) and bash names (read, printf -v) are refused', () => {
    refusedAll([
      ['echo $[1+{param.x}]', /\$\[…\]/],
      ['echo "$[1+{param.x}]"', /\$\[…\]/],
      ['declare -i n; n={param.x}', /integer attribute/],
      ['typeset -i n\nn={param.x}', /integer attribute/],
      ['f() { local -i n; n={param.x}; }', /integer attribute/],
      ['export -i n; read n <<EOF\n{param.x}\nEOF', /integer attribute/],
      ['local -i n={param.x}', /integer attribute/],
      ['read {param.x} <<EOF\n1\nEOF', /names a variable for read/],
      ['printf -v {param.x} %s 1', /names a variable for printf/],
    ]);
  });

  test('other spellings: command, exec, builtin, quotes and backslashes, env, busybox, paths, continuations, separators, assignments and redirections first', () => {
    refusedAll([
      ['command sh -c "echo {param.x}"', /code argument of sh -c/],
      ['exec sh -c "echo {param.x}"', /code argument of sh -c/],
      ['exec -a x sh -c "echo {param.x}"', /code argument of sh -c/],
      ['builtin eval "echo {param.x}"', /argument of eval/],
      ['\\sh -c "echo {param.x}"', /code argument of sh -c/],
      ['"sh" -c "echo {param.x}"', /code argument of sh -c/],
      ["'bash' -c \"echo {param.x}\"", /code argument of bash -c/],
      ['/usr/bin/env sh -c "echo {param.x}"', /code argument of sh -c/],
      ['busybox sh -c "echo {param.x}"', /code argument of sh -c/],
      ['/bin/sh -c "echo {param.x}"', /code argument of sh -c/],
      ['s\\\nh -c "echo {param.x}"', /code argument of sh -c/],
      ['sh \\\n  -c \\\n  "echo {param.x}"', /code argument of sh -c/],
      ['true; sh -c "echo {param.x}"', /code argument of sh -c/],
      ['true && sh -c "echo {param.x}"', /code argument of sh -c/],
      ['true | sh -c "echo {param.x}"', /code argument of sh -c/],
      ['true\nsh -c "echo {param.x}"', /code argument of sh -c/],
      ['! sh -c "echo {param.x}"', /code argument of sh -c/],
      ['if sh -c "echo {param.x}"; then :; fi', /code argument of sh -c/],
      ['time -p sh -c "echo {param.x}"', /code argument of sh -c/],
      ['A=1 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['2>/dev/null sh -c "echo {param.x}"', /code argument of sh -c/],
      ['sh 2>&1 -c "echo {param.x}"', /code argument of sh -c/],
      ['>/dev/null 2>&1 </dev/null sh -c "echo {param.x}"', /code argument of sh -c/],
      ['sh -c >&2 "echo {param.x}"', /code argument of sh -c/],
      ['$SHELL -c "echo {param.x}"', /program named by an expansion/],
      ['"$(command -v sh)" -c "echo {param.x}"', /program named by an expansion/],
      ['E=eval; $E {param.x}', /whose name is an expansion/],
      ['$(echo eval) {param.x}', /whose name is an expansion/],
      ['x=.; "$x" {param.x}', /whose name is an expansion/],
      ['{param.x} --version', /names the program to run/],
      ['PATH={param.x} knime', /sets PATH/],
      ['LD_PRELOAD={param.x} knime', /sets LD_PRELOAD/],
      ['env PERL5OPT={param.x} perl x.pl', /sets PERL5OPT/],
      ['alias s="sh -c"\ns "echo {param.x}"', /defines an alias/],
    ]);
    assert.equal(compileTemplate('A={param.x} knime 2>&1 >{out}/log'), 'A=${PIER_PARAM_x+"$PIER_PARAM_x"} knime 2>&1 >${PIER_OUT_DIR+"$PIER_OUT_DIR"}/log');
    assert.equal(compileTemplate('{workflow}/run.sh {param.x}'), '${PIER_WORKFLOW_DIR+"$PIER_WORKFLOW_DIR"}/run.sh ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('"$KNIME_HOME/knime" -x {param.x}'), '"$KNIME_HOME/knime" -x ${PIER_PARAM_x+"$PIER_PARAM_x"}');
  });

  test('constructs the rules do not follow word for word (case in $(…), escaped backquotes, odd comments, continued delimiters, aliases, exec here-documents) take no run parameter', () => {
    const unmodelled = /do not follow word for word/;
    refusedAll([
      ['echo "$(case a in a) eval {param.x};; esac)"', unmodelled],
      ['echo "$(\ncase a in (a) eval {param.x};; esac)"', /argument of eval/],
      ['echo `echo \\`sh -c {param.x}\\``', unmodelled],
      ['echo ""#; eval \\\necho {param.x}', unmodelled],
      ["echo ''#; eval {param.x}", unmodelled],
      [': `#`; eval \\\necho {param.x}', unmodelled],
      ['cat <<E\\\nF\nEF\neval {param.x}\nE', unmodelled],
      ['{ alias e=eval; }\ne {param.x}', unmodelled],
      ['command alias e=eval\ne {param.x}', unmodelled],
      ['exec 3<<E\n{param.x}\nE\n. /dev/fd/3', unmodelled],
      // A second review: quote tracking dash does not share, words split differently, and
      // the same constructs spelled with quotes, continuations or redirections first.
      ['echo $["] " ; eval {param.x} ; echo " $["]', unmodelled],
      ['((echo ")) " ; eval {param.x} ; echo " ((: "))', unmodelled],
      ['echo `\\\\eval {param.x}`', unmodelled],
      ['echo &>/dev/null eval {param.x}', unmodelled],
      ['echo "$(ca\\\nse a in a) eval {param.x};; esac)"', unmodelled],
      ['echo "$(f()case a in a) eval {param.x};; esac; f)"', unmodelled],
      ['cat <<E; echo $(\neval {param.x}\nE\n)', unmodelled],
      ['command al""ias e=eval\ne {param.x}', unmodelled],
      ['3<<E exec\n{param.x}\nE\n. /dev/fd/3', unmodelled],
      ['ex""ec 3<<E\n{param.x}\nE\n. /dev/fd/3', unmodelled],
      ['script -qc {param.x} /dev/null', /code argument of script -c/],
      ['env -iS "sh -c" {param.x}', /names the program|code/],
      ['echo a | sed -f /dev/fd/3 3<<E\n{param.x}\nE', /sed reads as code/],
      // A third review: Windows line endings, substitutions in here-document bodies, $((…)) and
      // ${…} holding quotes or substitutions, find's -exec commands reading a here-document.
      ['cat >{out}/p.txt <<EOF\r\nrows={param.rows}\r\nEOF\r\neval {param.x}\r\n', /argument of eval|carriage return/],
      ['cat <<E\u00a0X\nE\u00a0X\necho {param.x}\nE', /Unicode space/],
      ['cat <<E\n$(: # )\neval {param.x}\n)\nE', /follows a command substitution/],
      ['cat <<E\n$(cat <<X\n)\nX\neval {param.x}\n)\nE', /follows a command substitution/],
      ['echo $(( $(: ")))"; echo 1) )); eval {param.x} #"', unmodelled],
      ["x=abc; echo \"${x#'\"'}\" ; echo } ; eval {param.x}", unmodelled],
      ['find /tmp -maxdepth 0 -execdir sh -s \\; <<E\nrows={param.x}\nE', /find … sh reads as code/],
      ['find . -maxdepth 0 -exec flock + sh -c {param.x} \\;', /code argument of sh -c/],
      // A fourth review: line continuations inside operators and substitutions (XCU 2.2.1 removes
      // them before tokens are read), and export/readonly/local operands.
      ['x=1; ls -d $\\\n{y={param.x}}', unmodelled],
      ['echo $(\\\n(1 + {param.x}))', unmodelled],
      ['echo "$\\\n(eval {param.x})"', unmodelled],
      ['cat <<E\n$\\\n(eval {param.x})\nE', unmodelled],
      ['cat <\\\n<E\n: "\nE\neval {param.x} #"', unmodelled],
      ['export {param.x}; perl -e "print 1"', /names the variable export sets/],
      ['readonly PATH={param.x}', /sets PATH/],
    ]);
    // Ordinary templates near those constructs still compile.
    for (const ok of [
      'START=$(date +%s); case {param.mode} in full) knime -a;; *) knime -b;; esac',
      'OUT=$(mktemp -d); knime -workflow.variable=rows,{param.rows},int -destFile=$OUT/use-case.knwf --ignore-case',
      'echo "#rows={param.rows}" > {out}/meta.txt',
      'cat <<EOF >{out}/exec.log\nrows={param.rows}\nEOF',
      'knime -workflow.variable=alias,{param.a},String',
      'python3 -m knime_post --rows {param.rows}',
      'find {workflow} -name "*.xml" -exec grep -l {param.x} {} +',
      'knime -nosplash \\\n  -workflowFile={archive} \\\n  -workflow.variable=rows,{param.rows},int',
      'export KNIME_ROWS={param.rows}; knime',
      "jq '{name}' {out}/r.json; echo {param.x}",
    ]) {
      assert.doesNotThrow(() => compileTemplate(ok), ok);
    }
    // The same constructs without a run parameter, and ordinary comments, still compile (the other
    // placeholders carry values the executor chose, not a run's).
    assert.equal(compileTemplate('echo "$(case a in a) echo ok;; esac)" >{out}/x'), 'echo "$(case a in a) echo ok;; esac)" >${PIER_OUT_DIR+"$PIER_OUT_DIR"}/x');
    assert.equal(compileTemplate('knime {param.x} # a comment'), 'knime ${PIER_PARAM_x+"$PIER_PARAM_x"} # a comment');
    assert.equal(compileTemplate('exec knime -x {param.x}'), 'exec knime -x ${PIER_PARAM_x+"$PIER_PARAM_x"}');
    assert.equal(compileTemplate('echo "$(date)" {param.x}'), 'echo "$(date)" ${PIER_PARAM_x+"$PIER_PARAM_x"}');
  });

  test('a value is exactly one word wherever it stands (unquoted, in "…", in $(…), in a here-document), and a missing parameter is one empty word', () => {
    const value = ` a  * $(touch ${canary}/w) "q" 's' \\ `;
    const template = [
      "printf '<%s>' {param.x} {param.missing}",
      `printf '<%s>' "v={param.x}"`,
      `printf '<%s>' "$(printf '%s' {param.x})"`,
      "printf '<%s>' $(true) {param.x}",
      'cat <<EOF\n<{param.x}>\nEOF',
    ].join('; ');
    assert.deepEqual(parameterNames(template), ['x', 'missing']);
    const parameters = { ...Object.fromEntries(parameterNames(template).map((n) => [n, ''])), x: value };
    const out = spawnSync('/bin/dash', ['-c', compileTemplate(template)], { env: { PATH: process.env.PATH, ...templateEnv({ ...values, parameters }) }, cwd, encoding: 'utf8' }).stdout;
    assert.equal(out, `<${value}><><v=${value}><${value}><${value}><${value}>\n`);
    assert.deepEqual(fs.readdirSync(canary), []);
  });

  test('where /bin/sh is bash, nothing left compiles into arithmetic that runs a value', { skip: !fs.existsSync('/bin/bash') && 'no bash' }, () => {
    const hostile = `a[$(touch ${canary}/bash)]`;
    for (const template of ['test {param.n} -gt 3', '[ {param.n} -eq 3 ]', 'echo $(( 1 + 2 )) {param.n}', 'printf %d {param.n}', 'case {param.n} in 1) ;; esac', 'x={param.n}; echo "$x"']) {
      spawnSync('/bin/bash', ['-c', compileTemplate(template)], { env: { PATH: process.env.PATH, ...templateEnv({ ...values, parameters: { n: hostile } }) }, cwd, stdio: 'ignore' });
      assert.deepEqual(fs.readdirSync(canary), [], template);
    }
  });

  test('property: templates that hand text to a second reader (sh -c, bash -c, eval, trap) never run a value', () => {
    const piece = fc.constantFrom(
      ...['sh -c ', 'bash -c ', 'eval ', 'trap ', "'", '"', '`', '$(', ')', ' ', ';', '\n', '_ ', 'echo ', '{param.v}', '<<EOF\n', 'EOF\n', 'x'],
      // Options around -c, interpreters' code options, wrappers, here-strings, groups, redirections and assignments first.
      ...['sh -ec ', 'bash -c -u ', '-- ', '-o errexit ', 'sh -s ', '/dev/stdin ', '. ', 'perl -e ', 'perl -E ', 'node -e ', 'node -p ', 'timeout 5 ', 'env ', 'nohup ', 'nice ', 'command ', 'exec ', 'xargs ', 'find . -maxdepth 0 -exec ', ' \\; ', '<<< ', '{ ', '} ', '( ', '2>/dev/null ', 'A=1 ', '\\\n', '$[', ']', '$(( (1) + ', '))'],
    );
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
    const piece = fc.constantFrom("'", '"', '`', '$(', ')', '(', '${', '}', '$((', '))', '\\', '\n', ';', '|', '&&', ' ', '#', '<<EOF\n', '<<-EOF\n', "<<'EOF'\n", 'EOF\n', 'echo ', 'printf %s ', 'x', '=', '{param.v}', '{out}', '$', 'case x in ', 'x) ', ';; esac', 'eval ', 'exec ', '. ');
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
      { numRuns: Number(process.env.PIER_FUZZ_RUNS ?? 300) },
    );
  });
});
