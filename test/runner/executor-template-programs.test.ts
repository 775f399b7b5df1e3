// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell text, where ${…} is the shell's own expansion
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { compileTemplate, TemplateError, type TemplateValues, templateEnv } from '../../src/runner/executor-agent/template.js';
import { tempDir } from '../helpers/db.js';

/** Each template must be refused, naming its placeholder, with a reason matching `why`. */
function refusedAll(cases: [string, RegExp][]): void {
  for (const [template, why] of cases) {
    assert.throws(
      () => compileTemplate(template),
      (e: Error) => e instanceof TemplateError && /the placeholder \{(param\.[xn]|out|workdir)\}/.test(e.message) && why.test(e.message),
      template,
    );
  }
}

/** Each template compiles (the check finds no second reading). */
function acceptedAll(templates: string[]): void {
  for (const t of templates) assert.doesNotThrow(() => compileTemplate(t), t);
}

describe('command templates: programs that read a value again as code, beyond shells and interpreters', () => {
  test('tar, rsync and zip options whose value is a command, and operands that could be such options', () => {
    refusedAll([
      ['tar -xf a.tar --to-command={param.x}', /value of tar --to-command/],
      ['tar -xf a.tar --to-command "cat > {param.x}"', /value of tar --to-command/],
      ['tar -cf a.tar --checkpoint=1 --checkpoint-action=exec={param.x} .', /value of tar --checkpoint-action/],
      ['tar -I {param.x} -xf a.tar', /value of tar -I/],
      ['tar -xzf a.tar -I{param.x}', /value of tar -I/],
      ['tar -xzIf {param.x} a.tar', /operand of tar before --/],
      ['tar xf a.tar --use-compress-program={out}/gz', /value of tar --use-compress-program/],
      ['tar -cf a.tar --info-script {param.x} .', /value of tar --info-script/],
      ['tar -cf a.tar {param.x}', /operand of tar before --/],
      ['tar -C dir -x{param.x}', /option of tar|value of tar/],
      ['rsync -e {param.x} a host:b', /value of rsync -e/],
      ['rsync -av -e "ssh -p {param.x}" a host:b', /value of rsync -e/],
      ['rsync --rsh={param.x} a b', /value of rsync --rsh/],
      ['rsync -avze {param.x} a b', /value of rsync -e/],
      ['rsync --rsync-path "sudo {param.x}" a host:b', /value of rsync --rsync-path/],
      ['rsync -avz {param.x} dest/', /operand of rsync before --/],
      ['zip -T -TT {param.x} out.zip f', /value of zip -TT/],
      ['zip -T --unzip-command="unzip -t {param.x}" out.zip f', /value of zip --unzip-command/],
      ['zip -r out.zip {param.x}', /operand of zip before --/],
    ]);
    acceptedAll([
      'tar -xf {archive} -C {out}',
      'tar xzf {archive} -C {workdir}',
      'tar -czf {out}/a.tgz -C {workdir} -- {param.x}',
      'tar --exclude={param.x} -cf {out}/a.tar -C {workdir} .',
      'rsync -a {out}/ -- {param.x}',
      'zip -r {out}/a.zip -- {param.x}',
    ]);
  });

  test('SQL clients: -c/-e/-cmd, sqlite3 operands after the database, here-documents; psql -v passes values as data', () => {
    refusedAll([
      ['psql -c "select {param.x}"', /value of psql -c/],
      ['psql -d db --command={param.x}', /value of psql --command/],
      ['psql -Atc "select {param.x}"', /value of psql -c/],
      ['psql -o {param.x} -c "select 1"', /value of psql -o/],
      ['psql -f {param.x}', /value of psql -f/],
      ['psql db <<EOF\nselect {param.x};\nEOF', /here-document that psql reads as code/],
      ['sqlite3 :memory: {param.x}', /operand of sqlite3 that it runs as code/],
      ['sqlite3 db.sqlite "select 1" "{param.x}"', /operand of sqlite3 that it runs as code/],
      ['sqlite3 -cmd {param.x} db.sqlite', /value of sqlite3 -cmd/],
      ['sqlite3 --cmd "{param.x}" db.sqlite', /value of sqlite3 -cmd/],
      ['sqlite3 db.sqlite <<< "{param.x}"', /here-string that sqlite3 reads as code/],
      ['mysql -e "select {param.x}"', /value of mysql -e/],
      ['mariadb --execute={param.x}', /value of mariadb --execute/],
    ]);
    acceptedAll([
      "psql -v rows={param.x} -c 'select :rows'",
      'psql -h {param.x} -d reports -f {workflow}/q.sql',
      "sqlite3 {workdir}/db.sqlite 'select 1'",
      'psql -o {out}/result.txt -c "select 1"',
    ]);
  });

  test('docker, podman and kubectl: the command they run is checked as if it stood there; the image, entrypoint and variables are looked at', () => {
    refusedAll([
      ['docker run --rm alpine sh -c "echo {param.x}"', /code argument of sh -c/],
      ['docker run -e A=1 -v /x:/y -w /y --name job alpine sh -c "echo {param.x}"', /code argument of sh -c/],
      ['docker -H unix:///run/docker.sock run -it alpine bash -lc "echo {param.x}"', /code argument of bash -lc/],
      ['docker container run alpine python3 -c "print({param.x})"', /code argument of python3 -c/],
      ['docker exec -it box sh -c "echo {param.x}"', /code argument of sh -c/],
      ['docker compose -f c.yml run --rm app sh -c "echo {param.x}"', /code argument of sh -c/],
      ['podman run img {param.x}', /names the program to run/],
      ['docker run {param.x}', /operand of docker run/],
      ['docker run --entrypoint {param.x} img', /value of docker run --entrypoint/],
      ['docker run --health-cmd "curl {param.x}" img', /code argument of docker run --health-cmd/],
      ['docker run -e {param.x} img', /could name the variable/],
      ['docker run -e LD_PRELOAD={param.x} img', /sets LD_PRELOAD/],
      ['docker run -v {param.x}:/data img', /value of docker run -v/],
      ['docker run -i alpine sh <<EOF\necho {param.x}\nEOF', /here-document that sh reads as code/],
      ['kubectl exec pod -- sh -c "echo {param.x}"', /code argument of sh -c/],
      ['kubectl -n jobs exec -it pod -c main -- sh -c "echo {param.x}"', /code argument of sh -c/],
      ['kubectl run tmp --image=busybox --restart=Never -- sh -c "echo {param.x}"', /code argument of sh -c/],
      ['oc exec pod -- bash -c "echo {param.x}"', /code argument of bash -c/],
      ['kubectl exec {param.x} -- ls', /operand of kubectl exec/],
      ['kubectl {param.x} pod', /options and subcommand of kubectl/],
    ]);
    acceptedAll([
      "docker run --rm -e ROWS={param.x} -v {workdir}:/w img sh -c 'echo \"$ROWS\"'",
      'docker run --rm img knime -data {param.x}',
      'docker run --rm --name {param.x} img knime',
      'kubectl exec pod -c main -- knime --rows {param.x}',
      'docker ps --filter name={param.x}',
    ]);
  });

  test('prlimit and numactl are looked through like timeout and nice', () => {
    refusedAll([
      ['prlimit --nofile=1024 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['prlimit -n1024 -- sh -c "echo {param.x}"', /code argument of sh -c/],
      ['prlimit --pid 1 --as=100 bash -c "echo {param.x}"', /code argument of bash -c/],
      ['numactl --cpunodebind=0 --membind 0 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['numactl -N 0 -m 0 sh -c "echo {param.x}"', /code argument of sh -c/],
      ['numactl -N 0 {param.x}', /names the program to run/],
    ]);
    acceptedAll(['prlimit --as=2000000000 knime -workflow.variable=rows,{param.x},int', 'numactl -N 0 knime -data {param.x}']);
  });

  test('more programs that read a value as code: gtar/bsdtar, docker-compose, duckdb, clickhouse-client, julia, deno eval, ed, man -P, tcpdump -z', () => {
    refusedAll([
      ['gtar -xf a.tar --to-command={param.x}', /value of gtar --to-command/],
      ['gtar -cf a.tar --checkpoint=1 --checkpoint-action=exec={param.x} .', /value of gtar --checkpoint-action/],
      ['bsdtar -xf a.tar --to-command {param.x}', /value of bsdtar --to-command/],
      ['bsdtar -cf a.tar --checkpoint-action=exec={param.x} .', /value of bsdtar --checkpoint-action/],
      ['bsdtar -xf a {param.x}', /operand of bsdtar before --/],
      ['docker-compose run web sh -c {param.x}', /code argument of sh -c/],
      ['docker-compose -f c.yml exec -T web bash -lc "echo {param.x}"', /code argument of bash -lc/],
      ['docker-compose run --entrypoint {param.x} web', /docker-compose run --entrypoint|chooses|names/],
      ['duckdb -c {param.x}', /value of duckdb -c/],
      ['duckdb db.duckdb {param.x}', /operand of duckdb that it runs as code/],
      ['duckdb db.duckdb <<EOF\nselect {param.x};\nEOF', /here-document|here-string/],
      ['clickhouse-client -q {param.x}', /value of clickhouse-client -q/],
      ['clickhouse-client --query "select {param.x}"', /value of clickhouse-client --query/],
      ['clickhouse-client --query={param.x}', /value of clickhouse-client --query/],
      ['julia -e {param.x}', /code argument of julia -e/],
      ['julia --eval="println({param.x})"', /code argument of julia --eval/],
      ['julia -E {param.x}', /code argument of julia -E/],
      ['deno eval {param.x}', /code argument of deno eval/],
      ['deno eval --ext=ts "console.log({param.x})"', /code argument of deno eval/],
      ['ed -s f <<< {param.x}', /here-string that ed reads as code/],
      ['ed -s f <<EOF\n{param.x}\nw\nEOF', /here-document|ed reads as code/],
      ['ed -s {param.x}', /ed/],
      ['man -P {param.x} ls', /value of man -P/],
      ['man --pager="less {param.x}" ls', /value of man --pager/],
      ['tcpdump -C 1 -w {out}/a.pcap -z {param.x}', /value of tcpdump -z/],
      ['tcpdump -w f {param.x}', /operand of tcpdump before --/],
    ]);
    acceptedAll([
      'gtar -czf {out}/a.tgz -C {workdir} -- {param.x}',
      'bsdtar -xf {archive} -C {out}',
      'docker-compose run web echo {param.x}',
      "duckdb {out}/a.duckdb -c 'select 1'",
      "julia {workdir}/script.jl {param.x}",
      "deno eval 'console.log(Deno.args)' {param.x}",
      'man -- {param.x}',
      'tcpdump -w {out}/a.pcap -- {param.x}',
      'ed -s {out}/f.txt',
    ]);
  });

  test("a shell's operands after -c CODE are read as the code reads them: data where it quotes them, code where it runs them", () => {
    refusedAll([
      ["sh -c '$1' _ {param.x}", /operand of sh -c, which its code reads as \$1, and there it names the program to run/],
      ["sh -c '${1}' _ {param.x}", /operand of sh -c/],
      ["bash -c 'eval \"$1\"' _ {param.x}", /operand of bash -c.*argument of eval/],
      ["sh -c 'exec \"$@\"' _ {param.x}", /operand of sh -c.*names the program/],
      ["sh -c '$0' {param.x}", /operand of sh -c, which its code reads as \$0/],
      ["sh -c 'x=$(($1 + 1)); echo $x' _ {param.n}", /operand of sh -c.*arithmetic/],
      ["sh -c 'sh -c \"$1\"' _ {param.x}", /operand of sh -c.*code argument of sh -c/],
      ["sudo -u knime sh -c 'eval $1' _ {param.x}", /operand of sh -c.*argument of eval/],
      ["sh -c 'eval \"$1\"' _ {out}", /operand of sh -c.*argument of eval/],
      ["docker run img sh -c '$1' _ {param.x}", /operand of sh -c/],
    ]);
    acceptedAll([
      "sh -c 'echo \"$1\"' _ {param.x}",
      "sh -c 'printf \"%s\\n\" \"$@\"' _ {param.x}",
      "sh -c 'cp \"$1\" \"$2\"' _ {param.x} {out}/copy",
      "bash -o errexit -c 'echo \"$1\" $$' _ {param.x}",
      "sh -c 'cd \"$1\" && awk \"{print}\" x' _ {out}",
      "sh -c '$1' _ {out}",
      "sh -c 'echo done' _ {param.x}",
    ]);
  });
});

describe('what the refused operand templates would do: a real shell runs the value', () => {
  const scratch = tempDir('pier-template-programs-');
  const canary = path.join(scratch, 'canary');
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));
  const values: TemplateValues = { archive: '/w/a.knwf', workDir: '/w', workflowDir: '/w/workflow', outDir: '/w/out', runId: 'r1', attempt: '1', parameters: { x: `touch ${canary}` } };

  test("sh -c '$1' _ VALUE runs VALUE as a command (which is why it is refused); the accepted form prints it", () => {
    // Compiled by hand as the executor would, had the check let it through.
    const unsafe = `sh -c '$1' _ \${PIER_PARAM_x+"$PIER_PARAM_x"}`;
    execFileSync('/bin/sh', ['-c', unsafe], { env: { PATH: process.env.PATH, ...templateEnv(values) } });
    assert.equal(fs.existsSync(canary), true);
    fs.rmSync(canary);
    const out = execFileSync('/bin/sh', ['-c', compileTemplate(`sh -c 'printf "%s" "$1"' _ {param.x}`)], { env: { PATH: process.env.PATH, ...templateEnv(values) } });
    assert.equal(out.toString(), `touch ${canary}`);
    assert.equal(fs.existsSync(canary), false);
  });
});
