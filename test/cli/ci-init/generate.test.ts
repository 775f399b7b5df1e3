/**
 * The generated pipelines: valid YAML, the structure GitHub Actions and GitLab CI require
 * (checked offline against their documented keys), trusted publishing, and `pier ci init`'s
 * refusal to overwrite.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { ciInit } from '../../../src/cli/ci-init/command.js';
import { UsageError } from '../../../src/infra/errors.js';
import { tempDir } from '../../helpers/db.js';
import { pythonRepo, tychoRepo } from './repos.js';

type Obj = Record<string, unknown>;

/** Strict parse: duplicate keys, bad indentation, tabs and unknown tags are errors, warnings too. */
function parse(text: string): Obj {
  const doc = YAML.parseDocument(text, { strict: true, uniqueKeys: true, prettyErrors: true });
  assert.deepEqual(doc.errors.map(String), []);
  assert.deepEqual(doc.warnings.map(String), []);
  return doc.toJS() as Obj;
}

const STEP_KEYS = new Set(['id', 'if', 'name', 'uses', 'run', 'shell', 'with', 'env', 'working-directory', 'continue-on-error', 'timeout-minutes']);
const PERMISSION_SCOPES = new Set(['actions', 'attestations', 'checks', 'contents', 'deployments', 'id-token', 'issues', 'discussion', 'packages', 'pages', 'pull-requests', 'repository-projects', 'security-events', 'statuses']);
const EXPRESSION_ROOTS = new Set(['github', 'env', 'vars', 'secrets', 'inputs', 'steps', 'job', 'runner', 'matrix', 'needs', 'strategy']);

/** The workflow syntax (docs.github.com "Workflow syntax for GitHub Actions"), the parts we use. */
function checkGithubWorkflow(wf: Obj): void {
  for (const key of Object.keys(wf)) assert.ok(['name', 'run-name', 'on', 'permissions', 'env', 'defaults', 'concurrency', 'jobs'].includes(key), `unknown top-level key ${key}`);
  assert.ok(wf.on && typeof wf.on === 'object', 'on: is required');
  const on = wf.on as Obj;
  assert.deepEqual((on.push as Obj).tags, ['v*']);
  const inputs = (on.workflow_dispatch as Obj).inputs as Record<string, Obj>;
  for (const input of Object.values(inputs)) assert.ok(['string', 'boolean', 'choice', 'number', 'environment'].includes(input.type as string));
  const checkPermissions = (perms: Obj) => {
    for (const [scope, level] of Object.entries(perms)) {
      assert.ok(PERMISSION_SCOPES.has(scope), scope);
      assert.ok(['read', 'write', 'none'].includes(level as string), `${scope}: ${level}`);
    }
  };
  // Nothing at the workflow level: each job names what it needs (a job's permissions replace these).
  assert.deepEqual(wf.permissions, {});
  const jobs = wf.jobs as Record<string, Obj>;
  assert.ok(Object.keys(jobs).length > 0);
  for (const [id, job] of Object.entries(jobs)) {
    assert.match(id, /^[A-Za-z_][A-Za-z0-9_-]*$/);
    assert.ok(typeof job['runs-on'] === 'string', 'runs-on is required');
    assert.ok(job.permissions && typeof job.permissions === 'object', `${id}: permissions of its own`);
    checkPermissions(job.permissions as Obj);
    for (const need of [job.needs ?? []].flat() as string[]) assert.ok(need in jobs, `${id} needs ${need}`);
    const steps = job.steps as Obj[];
    assert.ok(Array.isArray(steps) && steps.length > 0);
    const ids = new Set<string>();
    for (const step of steps) {
      for (const key of Object.keys(step)) assert.ok(STEP_KEYS.has(key), `unknown step key ${key}`);
      assert.ok(('uses' in step) !== ('run' in step), `a step has exactly one of uses/run: ${JSON.stringify(step)}`);
      // Pinned by a full commit SHA (the release tag is in a comment, see pinnedComments).
      if ('uses' in step) assert.match(step.uses as string, /^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/);
      if (step.id) {
        assert.ok(!ids.has(step.id as string), `duplicate step id ${step.id}`);
        ids.add(step.id as string);
      }
      for (const v of Object.values((step.env as Obj) ?? {})) assert.equal(typeof v, 'string');
    }
  }
  // Every expression names a context GitHub has.
  for (const m of JSON.stringify(wf).matchAll(/\$\{\{\s*([^}]*?)\s*\}\}/g)) {
    for (const ref of m[1]!.matchAll(/(?:^|[\s|&(!])([a-z_-]+)\./g)) assert.ok(EXPRESSION_ROOTS.has(ref[1]!), `unknown context in ${m[0]}`);
  }
}

const GITLAB_JOB_KEYS = new Set(['stage', 'image', 'rules', 'variables', 'cache', 'script', 'before_script', 'artifacts', 'needs', 'id_tokens', 'resource_group']);

/** The .gitlab-ci.yml keywords (docs.gitlab.com "CI/CD YAML syntax reference"), the parts we use. */
function checkGitlabPipeline(ci: Obj): void {
  const jobs = Object.entries(ci).filter(([k]) => !['stages', 'include', 'variables', 'default', 'workflow'].includes(k) && !k.startsWith('.'));
  assert.ok(jobs.length > 0);
  const names = new Set(jobs.map(([k]) => k));
  for (const [name, job] of jobs as [string, Obj][]) {
    for (const key of Object.keys(job)) assert.ok(GITLAB_JOB_KEYS.has(key), `${name}: unknown key ${key}`);
    assert.ok(['build', 'test', 'deploy'].includes(job.stage as string), `${name}: a default stage`);
    assert.ok(Array.isArray(job.script) && (job.script as unknown[]).every((s) => typeof s === 'string'), `${name}: script is a list of strings`);
    for (const rule of job.rules as Obj[]) assert.equal(typeof rule.if, 'string');
    for (const need of (job.needs as string[]) ?? []) assert.ok(names.has(need), `${name} needs ${need}`);
    for (const v of Object.values((job.variables as Obj) ?? {})) assert.equal(typeof v, 'string');
    if (job.artifacts) assert.ok(((job.artifacts as Obj).paths as unknown[]).every((p) => typeof p === 'string'));
  }
}

/** Every `uses:` line of the text: pinned by commit with its release tag in a comment. */
function pinnedComments(text: string): string[] {
  const lines = text.split('\n').filter((l) => /^\s*(- )?uses:/.test(l));
  assert.ok(lines.length > 0);
  for (const l of lines) assert.match(l, /uses: [\w.-]+\/[\w.-]+@[0-9a-f]{40} # v\d+(\.\d+)*$/, l);
  return lines.map((l) => l.replace(/^.*uses: /, ''));
}

/** The jobs of the generated GitHub workflow: only `publish` may ask for an ID token. */
function checkJobSplit(wf: Obj): void {
  const jobs = wf.jobs as Record<string, Obj>;
  assert.deepEqual(Object.keys(jobs), ['label', 'build', 'publish']);
  assert.deepEqual(jobs.label!.permissions, {});
  assert.deepEqual(jobs.build!.permissions, { contents: 'read' });
  assert.deepEqual(jobs.publish!.permissions, { 'id-token': 'write' });
  assert.deepEqual([jobs.build!.needs, jobs.publish!.needs], ['label', ['label', 'build']]);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
  assert.deepEqual(jobs.publish!.concurrency, { group: 'pier-publish-${{ needs.label.outputs.label }}', 'cancel-in-progress': false });
  assert.equal(wf.concurrency, undefined, 'no workflow-wide group by ref');
  // The build hands the site on; the publish job has no checkout, only the artifact.
  const uses = (job: string) => ((jobs[job]!.steps as Obj[]).map((s) => s.uses).filter(Boolean) as string[]).map((u) => u.replace(/@.*/, ''));
  assert.ok(uses('build').includes('actions/upload-artifact'));
  assert.deepEqual(uses('publish'), ['actions/download-artifact', 'actions/setup-node']);
  assert.equal(((jobs.build!.steps as Obj[])[0]!.with as Obj)['persist-credentials'], false);
}

async function init(root: string, extra: Partial<Parameters<typeof ciInit>[0]> = {}) {
  return ciInit({ github: true, product: 'example-nodes', server: 'https://pier.example.com', dir: root, ...extra });
}

test('GitHub, Tycho: valid YAML; label, build and publish jobs, only publish with id-token: write; actions pinned by commit; the site handed on as an artifact; concurrency by label', async () => {
  const root = tychoRepo(tempDir('ci-gen-'));
  const result = await init(root);
  assert.equal(result.file, path.join(root, '.github/workflows/pier-publish.yml'));
  const wf = parse(fs.readFileSync(result.file, 'utf8'));
  checkGithubWorkflow(wf);
  checkJobSplit(wf);
  assert.deepEqual(
    pinnedComments(result.text).map((u) => u.replace(/@[0-9a-f]{40}/, '')),
    [
      'actions/setup-node # v7.0.0',
      'actions/checkout # v7.0.1',
      'actions/setup-java # v5.7.0',
      'actions/upload-artifact # v7.0.0',
      'actions/download-artifact # v8.0.1',
      'actions/setup-node # v7.0.0',
    ],
  );
  const jobSteps = (job: string) => ((wf.jobs as Obj)[job] as Obj).steps as Obj[];
  const label = jobSteps('label').find((s) => s.id === 'label')!;
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
  assert.equal((label.env as Obj).PIER_LABEL, '${{ inputs.label || vars.PIER_LABEL }}');
  assert.match(label.run as string, /\/cli\/pier\.mjs" -o "\$RUNNER_TEMP\/pier\.mjs"\nlabel="\$\(node "\$RUNNER_TEMP\/pier\.mjs" ci label\)"\necho "label=\$label" >> "\$GITHUB_OUTPUT"/);
  const build = jobSteps('build');
  assert.equal((build.find((s) => s.id === 'build')!.run as string).trim(), 'mvn --batch-mode --no-transfer-progress verify');
  const upload = build.find((s) => String(s.uses).startsWith('actions/upload-artifact@'))!;
  assert.deepEqual(upload.with, {
    name: 'pier-update-site',
    path: 'releng/org.example.update/target/repository\nreleng/org.example.update/target/*.zip\n',
    'if-no-files-found': 'error',
    'retention-days': 1,
  });
  const steps = jobSteps('publish');
  assert.deepEqual((steps[0]!.with as Obj), { name: 'pier-update-site', path: 'releng/org.example.update/target' });
  const publish = steps.find((s) => s.id === 'publish')!;
  assert.match(publish.run as string, /label="\$\(pier ci label\)"/);
  assert.match(publish.run as string, /--site releng\/org\.example\.update\/target\/repository/);
  assert.match(publish.run as string, /for zip in releng\/org\.example\.update\/target\/\*\.zip/);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
  assert.equal((publish.env as Obj).PIER_LABEL, '${{ needs.label.outputs.label }}');
  // No step interpolates event data into a script: inputs reach `run:` through the environment only.
  for (const job of ['label', 'build', 'publish']) for (const s of jobSteps(job)) assert.doesNotMatch(String(s.run ?? ''), /\$\{\{/);
  const env = ((wf.jobs as Obj).publish as Obj).env as Obj;
  assert.deepEqual(env, { PIER_SERVER: 'https://pier.example.com', PIER_PRODUCT: 'example-nodes' });
  // No secret is needed: nothing but the optional fallback reads the secrets context.
  assert.deepEqual([...result.text.matchAll(/secrets\.(\w+)/g)].map((m) => m[1]), ['PIER_EDIT_TOKEN', 'PIER_SFTP_PASSWORD']);
  assert.ok(result.lines.some((l) => l.includes('pier staff trust add example-nodes --github <owner>/<repo> --repository-id <repository id> --workflow .github/workflows/pier-publish.yml')));
});

test('GitHub, pure Python: conda bundling environment or the pixi task, then the zip of the bundled site', async () => {
  const condaText = (await init(pythonRepo(tempDir('ci-gen-')))).text;
  const conda = parse(condaText);
  checkGithubWorkflow(conda);
  checkJobSplit(conda);
  assert.ok(pinnedComments(condaText).some((u) => /^mamba-org\/setup-micromamba@[0-9a-f]{40} # v3\.0\.0$/.test(u)));
  const steps = ((conda.jobs as Obj).build as Obj).steps as Obj[];
  const setup = steps.find((s) => String(s.uses).startsWith('mamba-org/setup-micromamba@'))!;
  assert.match((setup.with as Obj)['create-args'] as string, /knime-extension-bundling/);
  const build = steps.find((s) => s.id === 'build')!;
  assert.equal(build.shell, 'bash -el {0}');
  assert.match(build.run as string, /^build_python_extension\.py \. pier-build\/update-site$/m);
  assert.match(build.run as string, /python -m zipfile -c \.\.\/update-site\.zip \*/);
  const publishSteps = ((conda.jobs as Obj).publish as Obj).steps as Obj[];
  assert.match(publishSteps.find((s) => s.id === 'publish')!.run as string, /--site pier-build\/update-site\n.*for zip in pier-build\/update-site\.zip/s);
  assert.deepEqual(publishSteps[0]!.with, { name: 'pier-update-site', path: 'pier-build' });

  const pixiText = (await init(pythonRepo(tempDir('ci-gen-'), { pixi: 'template' }))).text;
  const pixi = parse(pixiText);
  checkGithubWorkflow(pixi);
  checkJobSplit(pixi);
  assert.ok(pinnedComments(pixiText).some((u) => /^prefix-dev\/setup-pixi@[0-9a-f]{40} # v0\.9\.6$/.test(u)));
  const pixiSteps = ((pixi.jobs as Obj).build as Obj).steps as Obj[];
  assert.match(pixiSteps.find((s) => s.id === 'build')!.run as string, /^pixi run build pier-build\/update-site$/m);
});

test('GitHub without --server: the repository variable PIER_SERVER', async () => {
  const result = await init(tychoRepo(tempDir('ci-gen-')), { server: undefined });
  const wf = parse(result.text);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression
  assert.equal((((wf.jobs as Obj).publish as Obj).env as Obj).PIER_SERVER, '${{ vars.PIER_SERVER }}');
  assert.ok(result.lines.some((l) => /PIER_SERVER\s+the service base URL/.test(l)));
});

test('GitLab: .gitlab-ci.yml with a build job and a publish job holding id_tokens PIER_ID_TOKEN for the audience, rules for tags', async () => {
  const root = tychoRepo(tempDir('ci-gen-'));
  const result = await init(root, { github: false, gitlab: true, audience: 'https://pier.example.com' });
  assert.equal(result.file, path.join(root, '.gitlab-ci.yml'));
  const ci = parse(result.text);
  checkGitlabPipeline(ci);
  const publish = ci['pier-publish'] as Obj;
  assert.deepEqual(publish.id_tokens, { PIER_ID_TOKEN: { aud: 'https://pier.example.com' } });
  assert.deepEqual(publish.rules, [{ if: '$CI_COMMIT_TAG =~ /^v/' }, { if: '$CI_PIPELINE_SOURCE == "web"' }]);
  assert.deepEqual(publish.needs, ['pier-build']);
  assert.equal(publish.resource_group, 'pier-publish');
  assert.deepEqual((ci['pier-build'] as Obj).rules, publish.rules);
  assert.deepEqual(((ci['pier-build'] as Obj).artifacts as Obj).paths, ['releng/org.example.update/target/repository', 'releng/org.example.update/target/*.zip']);
  assert.equal((ci['pier-build'] as Obj).image, 'maven:3.9-eclipse-temurin-17');
  assert.ok(result.lines.some((l) => l.includes('pier staff trust add example-nodes --gitlab <group>/<project> --project-id <project id>')));

  // An existing .gitlab-ci.yml of the vendor's stays: an include file instead, and the next steps say so.
  const own = tychoRepo(tempDir('ci-gen-'));
  fs.writeFileSync(path.join(own, '.gitlab-ci.yml'), 'test:\n  script: [mvn test]\n');
  const inc = await init(own, { github: false, gitlab: true, audience: 'aud' });
  assert.equal(inc.file, path.join(own, 'pier-publish.gitlab-ci.yml'));
  assert.equal(fs.readFileSync(path.join(own, '.gitlab-ci.yml'), 'utf8'), 'test:\n  script: [mvn test]\n');
  checkGitlabPipeline(parse(inc.text));
  assert.ok(inc.lines.some((l) => l.includes('include: [{ local: pier-publish.gitlab-ci.yml }]')));

  const py = parse((await init(pythonRepo(tempDir('ci-gen-')), { github: false, gitlab: true, audience: 'aud' })).text);
  checkGitlabPipeline(py);
  assert.match(((py['pier-build'] as Obj).script as string[])[0]!, /micromamba run --name base build_python_extension\.py \. pier-build\/update-site/);
});

test('GitLab asks the server for the audience it announces (/api/publishing)', async () => {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(req.url === '/api/publishing' ? { trustedPublishing: { audience: 'pier-audience-from-server' } } : {}));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as import('node:net').AddressInfo;
    const result = await init(tychoRepo(tempDir('ci-gen-')), { github: false, gitlab: true, server: `http://127.0.0.1:${port}/` });
    const ci = parse(result.text);
    assert.deepEqual((ci['pier-publish'] as Obj).id_tokens, { PIER_ID_TOKEN: { aud: 'pier-audience-from-server' } });
    assert.equal(((ci['pier-publish'] as Obj).variables as Obj).PIER_SERVER, `http://127.0.0.1:${port}`);
  } finally {
    server.close();
  }
});

test('never overwrites without --force; bad options are refused before anything is written', async () => {
  const root = tychoRepo(tempDir('ci-gen-'));
  const first = await init(root);
  fs.writeFileSync(first.file, '# edited by the vendor\n');
  await assert.rejects(init(root), (e: Error) => e instanceof UsageError && /pier-publish\.yml exists; pass --force/.test(e.message));
  assert.equal(fs.readFileSync(first.file, 'utf8'), '# edited by the vendor\n');
  await init(root, { force: true });
  assert.match(fs.readFileSync(first.file, 'utf8'), /name: Publish to Pier/);
  // Our own .gitlab-ci.yml is replaced with --force (not turned into an include).
  await init(root, { github: false, gitlab: true, audience: 'a' });
  await assert.rejects(init(root, { github: false, gitlab: true, audience: 'a' }), /\.gitlab-ci\.yml exists; pass --force/);
  assert.equal((await init(root, { github: false, gitlab: true, audience: 'a', force: true })).file, path.join(root, '.gitlab-ci.yml'));

  const empty = tempDir('ci-gen-');
  await assert.rejects(init(empty), /no update site build found/);
  await assert.rejects(init(root, { gitlab: true }), /choose one provider/);
  await assert.rejects(init(root, { github: false }), /choose one provider/);
  await assert.rejects(init(root, { product: 'Bad Id' }), /--product Bad Id/);
  await assert.rejects(init(root, { server: 'ftp://x' }), /expected an http\(s\) URL/);
  await assert.rejects(init(root, { build: 'gradle' }), /--build: expected tycho or python/);
  assert.deepEqual(fs.readdirSync(empty), []);
});

test('the command line: pier ci init writes the workflow and prints the trust line with the repository from origin', () => {
  const root = tychoRepo(tempDir('ci-gen-'));
  execFileSync('git', ['init', '-q', root]);
  execFileSync('git', ['-C', root, 'remote', 'add', 'origin', 'git@github.com:example/example-nodes.git']);
  const out = execFileSync(process.execPath, ['bin/pier.js', 'ci', 'init', '--github', '--product', 'example-nodes', '--server', 'https://pier.example.com', '--dir', root], { encoding: 'utf8' });
  assert.match(out, /Wrote \.github\/workflows\/pier-publish\.yml/);
  assert.match(out, /pier staff trust add example-nodes --github example\/example-nodes --repository-id <repository id> --workflow \.github\/workflows\/pier-publish\.yml/);
  assert.match(out, /gh api repos\/example\/example-nodes --jq \.id/);
  const again = spawnSync(process.execPath, ['bin/pier.js', 'ci', 'init', '--github', '--product', 'example-nodes', '--dir', root], { encoding: 'utf8' });
  assert.equal(again.status, 1);
  assert.match(again.stderr, /exists; pass --force/);
});
