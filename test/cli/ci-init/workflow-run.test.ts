/**
 * The generated pipelines executed (docs/vendors.md#publishing-from-ci): `pier ci init` writes the
 * workflow into a vendor repository, the executor runs its publish job as GitHub Actions (or the
 * GitLab job as GitLab CI) would, with the build stubbed by a prebuilt P2 site where Tycho would
 * put it, and the publish step runs for real: the real `pier` CLI installed with
 * `npm install --global`, `pier ci label`, `pier publish` against a `pier serve` process whose
 * OIDC issuers are a local issuer, trusted publishing with no stored secret, the release, the
 * crawl, the download host.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { zipSync } from 'fflate';
import { createPostgresDatabase, tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type GithubRun, type GithubRunResult, runGithubJob, type StepContext } from './github-runner.js';
import { runGitlabJob } from './gitlab-runner.js';
import { type LocalIssuer, startIssuer } from './oidc-issuer.js';
import { pythonRepo, tychoRepo } from './repos.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const PIER = path.join(ROOT, 'bin/pier.js');
const REPO = { name: 'example/example-nodes', id: '812345', ownerId: '99001' };

/** What the vendor's PIER_CLI_PACKAGE points at: a package whose `pier` is this checkout's. */
function cliPackage(): string {
  const dir = tempDir('pier-cli-package-');
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'pier-cli-under-test', version: '0.0.0', type: 'module', bin: { pier: 'pier.js' } }));
  fs.writeFileSync(path.join(dir, 'pier.js'), `#!/usr/bin/env node\nawait import(${JSON.stringify(pathToFileURL(PIER).href)});\n`, { mode: 0o755 });
  return dir;
}

/** Files of a folder for fflate, relative names with `/`. */
function folderEntries(dir: string, prefix = ''): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) Object.assign(out, folderEntries(full, `${prefix}${e.name}/`));
    else out[`${prefix}${e.name}`] = fs.readFileSync(full);
  }
  return out;
}

/** The build step's stand-in: a prebuilt site in target/repository and its zip, as Tycho leaves them. */
function tychoBuildStub(moduleDir: string, prefix = 'org.example') {
  return ({ workspace }: { workspace: string }) => {
    const target = path.join(workspace, moduleDir, 'target');
    fs.rmSync(target, { recursive: true, force: true });
    buildSite(path.join(target, 'repository'), exampleSpec('jar', prefix));
    fs.writeFileSync(path.join(target, 'org.example.update-1.2.0-SNAPSHOT.zip'), zipSync(folderEntries(path.join(target, 'repository'))));
  };
}

interface Server {
  base: string;
  download: string;
  env: NodeJS.ProcessEnv;
  pier(args: string[]): { status: number | null; stdout: string; stderr: string };
  stop(): Promise<void>;
}

async function startServer(issuer: LocalIssuer, databaseUrl: string | null): Promise<Server> {
  const [http, downloads, sftp] = await Promise.all([freePort(), freePort(), freePort()]);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PIER_DATA_DIR: tempDir('pier-ci-e2e-'),
    PIER_HTTP_PORT: String(http),
    PIER_DOWNLOAD_PORT: String(downloads),
    PIER_SFTP_PORT: String(sftp),
    PIER_BASE_URL: `http://127.0.0.1:${http}`,
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${downloads}`,
    PIER_SFTP_HOST: '127.0.0.1',
    PIER_OIDC_GITHUB_ISSUER: issuer.url,
    PIER_OIDC_GITLAB_ISSUER: issuer.url,
    PIER_LOG_LEVEL: 'warn',
  };
  if (databaseUrl) env.PIER_DATABASE_URL = databaseUrl;
  const pier = (args: string[]) => {
    const r = spawnSync(process.execPath, [PIER, ...args], { env, encoding: 'utf8' });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const child = spawn(process.execPath, [PIER, 'serve', '--only', 'web,downloads,sftp'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (c) => {
    log += c;
  });
  child.stderr.on('data', (c) => {
    log += c;
  });
  const base = `http://127.0.0.1:${http}`;
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    // The SFTP server has a process of its own: it says when it listens.
    if (up && /sftp listening on/.test(log) && (await fetch(`http://127.0.0.1:${downloads}/healthz`).then((r) => r.status < 500, () => false))) break;
    if (child.exitCode !== null) throw new Error(`pier serve exited: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    download: `http://127.0.0.1:${downloads}`,
    env,
    pier,
    stop: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

function machineEnv(): Record<string, string> {
  const home = tempDir('runner-home-');
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8' };
}

/** setup-node's stand-in: node is already there; npm's global prefix goes on PATH, as on a runner. */
function setupNodeStub(prefix: string) {
  return (ctx: StepContext) => {
    ctx.setEnv('NPM_CONFIG_PREFIX', prefix);
    ctx.addPath(path.join(prefix, 'bin'));
  };
}

type WorkflowRun = Omit<GithubRun, 'job' | 'stubs' | 'machineEnv' | 'needs' | 'artifacts'> & {
  /** Stand-ins of the build job's toolchain steps (by step id or action name). */
  buildStubs: GithubRun['stubs'];
};

interface WorkflowResult {
  triggered: boolean;
  ok: boolean;
  jobs: Record<'label' | 'build' | 'publish', GithubRunResult | null>;
  /** Every step run, job after job. */
  steps: GithubRunResult['steps'];
  idTokenRequests: { audience: string }[];
}

/**
 * The whole generated workflow as GitHub runs it: `label`, then `build` (in the checked-out
 * repository), then `publish`, each job on a machine of its own (its own home, npm prefix and
 * workspace: the publish job starts empty and gets the site only through the artifact), each
 * only once the jobs it needs succeeded.
 */
async function runWorkflow(run: WorkflowRun): Promise<WorkflowResult> {
  const artifacts = tempDir('artifacts-');
  const jobs: WorkflowResult['jobs'] = { label: null, build: null, publish: null };
  const machine = (stubs: GithubRun['stubs']) => ({ machineEnv: machineEnv(), stubs: { 'actions/setup-node': setupNodeStub(tempDir('npm-global-')), ...stubs } });
  const { buildStubs, ...rest } = run;
  const common = { ...rest, repo: run.workspace };
  jobs.label = await runGithubJob({ ...common, ...machine({}), job: 'label', workspace: tempDir('job-label-') });
  if (jobs.label.ok) {
    jobs.build = await runGithubJob({ ...common, ...machine({ 'actions/checkout': () => {}, ...buildStubs }), job: 'build', needs: { label: jobs.label }, artifacts });
  }
  if (jobs.build?.ok) {
    jobs.publish = await runGithubJob({
      ...common,
      ...machine({}),
      job: 'publish',
      workspace: tempDir('job-publish-'),
      needs: { label: jobs.label, build: jobs.build },
      artifacts,
    });
  }
  const ran = [jobs.label, jobs.build, jobs.publish].filter((j): j is GithubRunResult => j !== null);
  return {
    triggered: jobs.label.triggered,
    ok: jobs.publish?.ok ?? false,
    jobs,
    steps: ran.flatMap((j) => j.steps),
    idTokenRequests: ran.flatMap((j) => j.idTokenRequests),
  };
}

const stepLog = (r: WorkflowResult) => r.steps.map((s) => `--- ${s.name} (${s.kind}, exit ${s.exitCode})\n${s.output}`).join('\n');

async function labels(server: Server, token: string): Promise<{ label: string; current: number | null; releases: { number: number }[] }[]> {
  const res = await fetch(`${server.base}/api/products/example-nodes/labels`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { labels: never[] }).labels;
}

function databases(): { name: string; url: () => Promise<{ url: string | null; drop(): Promise<void> }> }[] {
  const list: { name: string; url: () => Promise<{ url: string | null; drop(): Promise<void> }> }[] = [{ name: 'SQLite', url: async () => ({ url: null, drop: async () => {} }) }];
  const pg = process.env.TEST_DATABASE_URL;
  if (pg) list.push({ name: 'PostgreSQL', url: () => createPostgresDatabase(pg) });
  return list;
}

for (const db of databases()) {
  test(`the generated GitHub workflow publishes with trusted publishing (${db.name})`, { timeout: 240_000 }, async () => {
    const database = await db.url();
    const issuer = await startIssuer();
    const server = await startServer(issuer, database.url);
    try {
      const reg = server.pier(['staff', 'register', 'example-nodes', '--name', 'Example Nodes', '--json']);
      assert.equal(reg.status, 0, reg.stderr);
      const creds = JSON.parse(reg.stdout) as { editToken: string; sftp: { password: string } };

      // The vendor: a Tycho repository, `pier ci init` as printed in the README.
      const workspace = tychoRepo(tempDir('vendor-repo-'));
      const init = spawnSync(process.execPath, [PIER, 'ci', 'init', '--github', '--product', 'example-nodes', '--server', server.base], { cwd: workspace, encoding: 'utf8' });
      assert.equal(init.status, 0, init.stderr);
      const trustLine = /pier staff trust add .*/.exec(init.stdout)![0];
      // The staff: the printed line with the ids filled in.
      const args = trustLine.replace('<owner>/<repo>', REPO.name).replace('<repository id>', REPO.id).split(' ').slice(1);
      const bound = server.pier([...args, '--owner-id', REPO.ownerId]);
      assert.equal(bound.status, 0, bound.stderr);

      /** What the build's tools see: a Maven plugin or test could read any of this. */
      const seenByBuild: Record<string, string>[] = [];
      const common: WorkflowRun = {
        workflowFile: '.github/workflows/pier-publish.yml',
        workspace,
        repository: REPO,
        // No PIER_CLI_PACKAGE: the pipeline takes the one-file pier the server serves (/cli/pier.mjs).
        vars: {},
        issuer,
        event: { name: 'push', ref: 'refs/tags/v5.3.1' },
        buildStubs: {
          'actions/setup-java': () => {},
          build: (ctx) => {
            seenByBuild.push(ctx.env);
            tychoBuildStub('releng/org.example.update')(ctx);
          },
        },
      };

      // A branch push runs nothing; a manual run from main has no label to take and says so
      // before anything is built.
      assert.equal((await runWorkflow({ ...common, event: { name: 'push', ref: 'refs/heads/main' } })).triggered, false);
      const noLabel = await runWorkflow({ ...common, event: { name: 'workflow_dispatch', ref: 'refs/heads/main', inputs: { label: '' } } });
      assert.equal(noLabel.ok, false);
      const failedStep = noLabel.steps.find((s) => s.exitCode !== 0)!;
      assert.equal(failedStep.name, 'Take the label from the tag or branch');
      assert.match(failedStep.output, /"main" names no version.*PIER_LABEL/);
      assert.equal(noLabel.jobs.build, null, 'nothing built');
      assert.deepEqual(await labels(server, creds.editToken), []);

      // The release tag: label, build, then publish with the ID token, released, crawled.
      const run = await runWorkflow(common);
      const publish = run.steps.find((s) => s.name === 'Publish to Pier')!;
      assert.ok(run.ok, stepLog(run));
      assert.deepEqual(
        run.steps.map((s) => `${s.kind} ${s.name}`),
        [
          'stub Set up Node.js',
          'run Take the label from the tag or branch',
          'stub Check out',
          'stub Set up Java',
          'stub Build the update site',
          'stub Hand the update site to the publish job',
          'stub Fetch the update site',
          'stub Set up Node.js',
          'run Install the pier CLI',
          'run Publish to Pier',
        ],
      );
      assert.deepEqual(run.jobs.label?.outputs, { label: '5.3' });
      assert.match(publish.output, /Publishing example-nodes to label 5\.3/);
      assert.match(publish.output, /trusted publishing: GitHub Actions repository=example\/example-nodes/);
      assert.doesNotMatch(publish.output, /pier_tp_|pier_et_/);
      // Only the publish job could ask for an ID token: not the build, whose tools run third-party code.
      assert.deepEqual([run.jobs.label?.idTokenOffered, run.jobs.build?.idTokenOffered, run.jobs.publish?.idTokenOffered], [false, false, true]);
      assert.ok(seenByBuild.length > 0 && seenByBuild.every((env) => !('ACTIONS_ID_TOKEN_REQUEST_URL' in env) && !('ACTIONS_ID_TOKEN_REQUEST_TOKEN' in env)));
      // The ID token was asked for the server's audience (PIER_BASE_URL by default), once.
      assert.deepEqual(run.idTokenRequests, [{ audience: server.base }]);
      // Publishes queue by label, not by ref: another tag of the 5.3 line waits for this one.
      assert.equal(run.jobs.publish?.concurrency, 'pier-publish-5.3');

      const after = await labels(server, creds.editToken);
      assert.deepEqual(after.map((l) => l.label), ['5.3']);
      assert.equal(after[0]!.current, 1);
      // Who released it: this repository's workflow, for the tag (the contract's `publisher`, `releasedBy` in the code).
      const release = after[0]!.releases[0]! as { releasedBy?: Record<string, unknown>; publisher?: Record<string, unknown> | null };
      const by = release.releasedBy ?? release.publisher;
      assert.deepEqual([by?.repository, by?.workflow, by?.ref], [REPO.name, '.github/workflows/pier-publish.yml', 'refs/tags/v5.3.1'], JSON.stringify(after));
      const built = fs.readFileSync(path.join(workspace, 'releng/org.example.update/target/repository/content.jar'));
      const served = await fetch(`${server.download}/example-nodes/5.3/content.jar`);
      assert.equal(served.status, 200);
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), built);
      const files = (await (await fetch(`${server.base}/api/products/example-nodes/labels/5.3/files`, { headers: { authorization: `Bearer ${creds.editToken}` } })).json()) as { archive: { sha256: string } | null };
      const zip = fs.readFileSync(path.join(workspace, 'releng/org.example.update/target/org.example.update-1.2.0-SNAPSHOT.zip'));
      assert.equal(files.archive?.sha256, createHash('sha256').update(zip).digest('hex'), 'the Tycho zip is update-site/5.3.zip');

      // Stored secrets instead (no binding used): a manual run with a label of its own.
      const withSecrets = await runWorkflow({
        ...common,
        secrets: { PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password },
        event: { name: 'workflow_dispatch', ref: 'refs/heads/main', inputs: { label: 'nightly' } },
      });
      const secretStep = withSecrets.steps.find((s) => s.name === 'Publish to Pier')!;
      assert.ok(withSecrets.ok, stepLog(withSecrets));
      assert.match(secretStep.output, /Using the stored secrets/);
      assert.equal(withSecrets.idTokenRequests.length, 0);
      assert.equal(withSecrets.jobs.publish?.concurrency, 'pier-publish-nightly');
      assert.deepEqual((await labels(server, creds.editToken)).map((l) => l.label).sort(), ['5.3', 'nightly']);

      // Another repository with the same workflow is refused naming the claim; 5.3 stays as it was.
      const stranger = await runWorkflow({ ...common, repository: { ...REPO, id: '999' }, event: { name: 'push', ref: 'refs/tags/v5.3.2' } });
      assert.equal(stranger.jobs.publish?.concurrency, 'pier-publish-5.3', 'the same queue as v5.3.1');
      const refused = stranger.steps.find((s) => s.name === 'Publish to Pier')!;
      assert.equal(refused.exitCode, 4, refused.output);
      assert.match(refused.output, /repository_id/);
      const still = (await labels(server, creds.editToken)).find((l) => l.label === '5.3')!;
      assert.equal(still.current, 1);
      assert.equal(still.releases.length, 1);
    } finally {
      await server.stop();
      await issuer.close();
      await database.drop();
    }
  });
}

test('a pure-Python extension publishes its bundled site and zip; without `id-token: write` no ID token, refused before any upload', { timeout: 180_000 }, async () => {
  const issuer = await startIssuer();
  const server = await startServer(issuer, null);
  try {
    const creds = JSON.parse(server.pier(['staff', 'register', 'example-nodes', '--name', 'Example Nodes', '--json']).stdout) as { editToken: string };
    const bound = server.pier(['staff', 'trust', 'add', 'example-nodes', '--github', REPO.name, '--repository-id', REPO.id, '--owner-id', REPO.ownerId, '--workflow', '.github/workflows/pier-publish.yml']);
    assert.equal(bound.status, 0, bound.stderr);
    const common = {
      workflowFile: '.github/workflows/pier-publish.yml',
      repository: REPO,
      vars: { PIER_CLI_PACKAGE: cliPackage() },
      issuer,
      event: { name: 'push' as const, ref: 'refs/tags/v5.4.0' },
    };

    // knime.yml: bundled into pier-build/update-site and zipped next to it (the stub stands in for build_python_extension.py).
    const python = pythonRepo(tempDir('vendor-py-'));
    assert.equal(spawnSync(process.execPath, [PIER, 'ci', 'init', '--github', '--product', 'example-nodes', '--server', server.base], { cwd: python }).status, 0);
    const bundled = await runWorkflow({
      ...common,
      workspace: python,
      buildStubs: {
        'mamba-org/setup-micromamba': () => {},
        build: ({ workspace }) => {
          const site = path.join(workspace, 'pier-build/update-site');
          buildSite(site, exampleSpec('jar', 'org.example.py'));
          fs.writeFileSync(path.join(workspace, 'pier-build/update-site.zip'), zipSync(folderEntries(site)));
        },
      },
    });
    const step = bundled.steps.find((s) => s.name === 'Publish to Pier')!;
    assert.ok(bundled.ok, stepLog(bundled));
    assert.match(step.output, /trusted publishing: GitHub Actions/);
    // Both uploads of spec SFTP rule 5: the folder and the archive, as update-site/5.4.zip.
    const files = (await (await fetch(`${server.base}/api/products/example-nodes/labels/5.4/files`, { headers: { authorization: `Bearer ${creds.editToken}` } })).json()) as { archive: { sha256: string } | null };
    const zip = fs.readFileSync(path.join(python, 'pier-build/update-site.zip'));
    assert.equal(files.archive?.sha256, createHash('sha256').update(zip).digest('hex'));
    const served = await fetch(`${server.download}/example-nodes/5.4/content.jar`);
    assert.equal(served.status, 200);
    assert.deepEqual(Buffer.from(await served.arrayBuffer()), fs.readFileSync(path.join(python, 'pier-build/update-site/content.jar')));

    // The same Tycho workflow without the permission: GitHub gives no ID token, pier publish has no credentials.
    const workspace = tychoRepo(tempDir('vendor-repo-'));
    assert.equal(spawnSync(process.execPath, [PIER, 'ci', 'init', '--github', '--product', 'example-nodes', '--server', server.base], { cwd: workspace }).status, 0);
    const file = path.join(workspace, '.github/workflows/pier-publish.yml');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('  id-token: write', '  id-token: none'));
    const run = await runWorkflow({
      ...common,
      workspace,
      event: { name: 'push', ref: 'refs/tags/v5.3.1' },
      buildStubs: { 'actions/setup-java': () => {}, build: tychoBuildStub('releng/org.example.update') },
    });
    const publish = run.steps.find((s) => s.name === 'Publish to Pier')!;
    assert.equal(publish.exitCode, 2, publish.output);
    assert.match(publish.output, /no credentials/);
    assert.equal(run.idTokenRequests.length, 0);
    assert.deepEqual((await labels(server, creds.editToken)).map((l) => l.label), ['5.4']);
  } finally {
    await server.stop();
    await issuer.close();
  }
});

test('the generated GitLab pipeline publishes with its id_tokens ID token', { timeout: 180_000 }, async () => {
  const issuer = await startIssuer();
  const server = await startServer(issuer, null);
  try {
    const reg = server.pier(['staff', 'register', 'example-nodes', '--name', 'Example Nodes', '--json']);
    const creds = JSON.parse(reg.stdout) as { editToken: string };
    const workspace = tychoRepo(tempDir('vendor-repo-'));
    const init = spawnSync(process.execPath, [PIER, 'ci', 'init', '--gitlab', '--product', 'example-nodes', '--server', server.base], { cwd: workspace, encoding: 'utf8' });
    assert.equal(init.status, 0, init.stderr);
    const trustLine = /pier staff trust add .*/.exec(init.stdout)![0];
    const bound = server.pier([...trustLine.replace('<group>/<project>', 'example/example-nodes').replace('<project id>', '4711').split(' ').slice(1), '--namespace-id', '77']);
    assert.equal(bound.status, 0, bound.stderr);
    const npmPrefix = tempDir('npm-global-');
    const project = { path: 'example/example-nodes', id: '4711', namespaceId: '77' };
    const common = {
      ciFile: '.gitlab-ci.yml',
      workspace,
      project,
      issuer,
      // The node image's global npm prefix and PATH, and the project's CI/CD variable.
      machineEnv: { ...machineEnv(), NPM_CONFIG_PREFIX: npmPrefix, PATH: `${path.join(npmPrefix, 'bin')}:${process.env.PATH}` },
      // No PIER_CLI_PACKAGE: the one-file pier the server serves.
      variables: {},
      stubJobs: { 'pier-build': tychoBuildStub('releng/org.example.update') },
    };
    // A branch pipeline from a push runs neither job.
    assert.deepEqual((await runGitlabJob({ ...common, pipeline: { source: 'push', branch: 'main' } })).jobs, []);
    const run = await runGitlabJob({ ...common, pipeline: { source: 'push', tag: 'v4.7.2' } });
    const publish = run.jobs.find((j) => j.name === 'pier-publish')!;
    assert.ok(run.ok, run.jobs.map((j) => `--- ${j.name} (${j.kind}, exit ${j.exitCode})\n${j.output}`).join('\n'));
    assert.deepEqual(run.jobs.map((j) => `${j.kind} ${j.name}`), ['stub pier-build', 'run pier-publish']);
    assert.match(publish.output, /trusted publishing: GitLab CI project_path=example\/example-nodes/);
    // The token carried the audience the pipeline declared, which the server announced.
    assert.deepEqual(run.audiences, [server.base]);
    const res = await fetch(`${server.base}/api/products/example-nodes/labels`, { headers: { authorization: `Bearer ${creds.editToken}` } });
    const { labels: after } = (await res.json()) as { labels: { label: string; current: number | null }[] };
    assert.deepEqual(after.map((l) => [l.label, l.current]), [['4.7', 1]]);
  } finally {
    await server.stop();
    await issuer.close();
  }
});
