import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { detectBuild } from '../../../src/cli/ci-init/detect.js';
import { UsageError } from '../../../src/infra/errors.js';
import { tempDir } from '../../helpers/db.js';
import { pythonRepo, tychoRepo } from './repos.js';

test('a Tycho reactor: the eclipse-repository module, its target/repository and zip, the Java Tycho needs', () => {
  const build = detectBuild(tychoRepo(tempDir('ci-tycho-')));
  assert.equal(build.kind, 'tycho');
  if (build.kind !== 'tycho') return;
  assert.equal(build.module, 'releng/org.example.update');
  assert.equal(build.site, 'releng/org.example.update/target/repository');
  assert.equal(build.archiveGlob, 'releng/org.example.update/target/*.zip');
  // <artifactId>-<version> with the version inherited from the parent (archive-repository's default name).
  assert.equal(build.archiveName, 'org.example.update-1.2.0-SNAPSHOT.zip');
  assert.equal(build.command, 'mvn --batch-mode --no-transfer-progress verify');
  assert.equal(build.javaVersion, '17');
});

test('Tycho: the Maven wrapper, Tycho 5 on Java 21, a finalName, the root as the repository module', () => {
  const root = tychoRepo(tempDir('ci-tycho-'), { wrapper: true, tychoVersion: '5.0.0', finalName: 'example-site' });
  const build = detectBuild(root);
  assert.ok(build.kind === 'tycho');
  assert.equal(build.command, './mvnw --batch-mode --no-transfer-progress verify');
  assert.equal(build.javaVersion, '21');
  assert.equal(build.archiveName, 'example-site.zip');
});

test('Tycho: several eclipse-repository modules need --module; none is refused naming what is missing', () => {
  const root = tychoRepo(tempDir('ci-tycho-'), { extraRepositories: ['releng/org.example.other'] });
  assert.throws(() => detectBuild(root), (e: Error) => e instanceof UsageError && /2 eclipse-repository modules .*--module/.test(e.message));
  const chosen = detectBuild(root, { module: 'releng/org.example.other' });
  assert.ok(chosen.kind === 'tycho' && chosen.site === 'releng/org.example.other/target/repository');
  assert.throws(() => detectBuild(root, { module: 'nope' }), /not an eclipse-repository module/);
  const none = tychoRepo(tempDir('ci-tycho-'), { noRepository: true });
  assert.throws(() => detectBuild(none), (e: Error) => e instanceof UsageError && /no module with <packaging>eclipse-repository<\/packaging>/.test(e.message));
});

test('Tycho pomless: .mvn/extensions.xml with tycho-build and a module folder holding category.xml', () => {
  const root = tempDir('ci-pomless-');
  fs.mkdirSync(path.join(root, '.mvn'));
  fs.writeFileSync(path.join(root, '.mvn/extensions.xml'), '<extensions><extension><groupId>org.eclipse.tycho</groupId><artifactId>tycho-build</artifactId><version>4.0.8</version></extension></extensions>');
  fs.writeFileSync(path.join(root, 'pom.xml'), '<project><modelVersion>4.0.0</modelVersion><groupId>g</groupId><artifactId>a</artifactId><version>1</version><packaging>pom</packaging><modules><module>site</module></modules></project>');
  fs.mkdirSync(path.join(root, 'site'));
  fs.writeFileSync(path.join(root, 'site/category.xml'), '<site/>');
  const build = detectBuild(root);
  assert.ok(build.kind === 'tycho');
  assert.equal(build.site, 'site/target/repository');
  assert.equal(build.archiveName, null);
});

test('a pure-Python extension: knime.yml at the root, bundled from a conda environment', () => {
  const build = detectBuild(pythonRepo(tempDir('ci-py-')));
  assert.deepEqual(build, { kind: 'python', extension: '.', runner: 'conda', pixiTask: false, site: 'pier-build/update-site', archive: 'pier-build/update-site.zip' });
});

test("a pure-Python extension with the KNIME template's pixi build task (it takes the destination)", () => {
  const build = detectBuild(pythonRepo(tempDir('ci-py-'), { pixi: 'template' }));
  assert.ok(build.kind === 'python');
  assert.equal(build.runner, 'pixi');
  // A build task with a fixed destination cannot write where the pipeline looks: the conda way instead.
  const fixed = detectBuild(pythonRepo(tempDir('ci-py-'), { pixi: 'no-args' }));
  assert.ok(fixed.kind === 'python' && fixed.runner === 'conda' && fixed.pixiTask);
});

test('knime.yml in a subfolder; several need --module; build output folders are not searched', () => {
  const root = pythonRepo(tempDir('ci-py-'), { extension: 'extensions/example' });
  const build = detectBuild(root);
  assert.ok(build.kind === 'python' && build.extension === 'extensions/example');
  fs.mkdirSync(path.join(root, 'pier-build/update-site'), { recursive: true });
  fs.writeFileSync(path.join(root, 'pier-build/update-site/knime.yml'), 'name: copy\n');
  assert.equal(detectBuild(root).kind, 'python');
  pythonRepo(root, { extension: 'extensions/other' });
  assert.throws(() => detectBuild(root), /found 2 knime.yml files \(extensions\/example, extensions\/other\).*--module/);
  const other = detectBuild(root, { module: 'extensions/other' });
  assert.ok(other.kind === 'python' && other.extension === 'extensions/other');
});

test('neither: refused, saying what was looked for', () => {
  const root = tempDir('ci-none-');
  fs.writeFileSync(path.join(root, 'pom.xml'), '<project><artifactId>plain-maven</artifactId></project>');
  fs.writeFileSync(path.join(root, 'README.md'), '# nothing to build\n');
  assert.throws(
    () => detectBuild(root),
    (e: Error) => e instanceof UsageError && /no update site build found/.test(e.message) && /tycho-maven-plugin/.test(e.message) && /knime\.yml/.test(e.message),
  );
  assert.throws(() => detectBuild(path.join(root, 'missing')), /is not a folder/);
});

test('both a Tycho build and a knime.yml: refused until --build chooses', () => {
  const root = pythonRepo(tychoRepo(tempDir('ci-both-')), { extension: 'python/example' });
  assert.throws(() => detectBuild(root), (e: Error) => e instanceof UsageError && /both a Maven Tycho build and a knime.yml .*--build tycho or --build python/.test(e.message));
  assert.equal(detectBuild(root, { build: 'tycho' }).kind, 'tycho');
  assert.equal(detectBuild(root, { build: 'python' }).kind, 'python');
  assert.throws(() => detectBuild(tychoRepo(tempDir('ci-t-')), { build: 'python' }), /no knime.yml here/);
  assert.throws(() => detectBuild(pythonRepo(tempDir('ci-p-')), { build: 'tycho' }), /no Maven Tycho build here/);
});
