/**
 * What builds the update site in a vendor's repository: a Maven Tycho build with an
 * `eclipse-repository` module, or a pure-Python extension described by `knime.yml` and bundled
 * by the platform's `build_python_extension.py` (conda package `knime-extension-bundling`).
 * Only files are read; nothing is built or run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import { UsageError } from '../../infra/errors.js';

export interface TychoBuild {
  kind: 'tycho';
  /** The build command, run at the repository root. */
  command: string;
  /** The eclipse-repository module, relative to the root with `/` ('' for the root itself). */
  module: string;
  /** `<module>/target/repository`: the p2 repository Tycho assembles (tycho-p2-repository:assemble-repository). */
  site: string;
  /** `<module>/target/*.zip`: the archive tycho-p2-repository:archive-repository writes (`<finalName>.zip`). */
  archiveGlob: string;
  /** What the archive is expected to be called, for the messages (`<artifactId>-<version>.zip`). */
  archiveName: string | null;
  javaVersion: '17' | '21';
}

export interface PythonBuild {
  kind: 'python';
  /** The folder holding knime.yml, relative to the root ('.' for the root). */
  extension: string;
  /** How the bundler runs: through the project's pixi `build` task, or from a conda environment. */
  runner: 'pixi' | 'conda';
  /** pixi.toml has a `build` task running the bundler (used only when it takes the destination as its argument, as the KNIME template's does). */
  pixiTask: boolean;
  /** Where the pipeline writes the bundled update site and its archive. */
  site: string;
  archive: string;
}

export type Build = TychoBuild | PythonBuild;

/** Folders never searched: version control, dependencies, build output, environments. */
const SKIP = new Set(['.git', 'node_modules', 'target', '.pixi', '.venv', 'venv', '__pycache__', 'build', 'dist', 'pier-build']);

export const PYTHON_SITE = 'pier-build/update-site';
export const PYTHON_ARCHIVE = 'pier-build/update-site.zip';

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, processEntities: false, htmlEntities: false, isArray: (name) => name === 'module' || name === 'plugin' || name === 'extension' });

interface Pom {
  artifactId?: string;
  version?: string;
  packaging?: string;
  modules?: { module?: string[] };
  parent?: { version?: string };
  properties?: Record<string, unknown>;
  build?: { finalName?: string };
}

function readPom(file: string): Pom | null {
  try {
    const doc = parser.parse(fs.readFileSync(file, 'utf8')) as { project?: Pom };
    return doc.project ?? null;
  } catch {
    return null;
  }
}

function text(v: unknown): string | undefined {
  return typeof v === 'string' ? v.trim() : undefined;
}

/** Relative path with `/`, '' for the root. */
function rel(root: string, dir: string): string {
  return path.relative(root, dir).split(path.sep).join('/');
}

interface TychoScan {
  usesTycho: boolean;
  repositories: { dir: string; pom: Pom | null }[];
  tychoVersion: string | null;
}

/**
 * Walks the reactor from the root pom through `<modules>` (and their modules), as Maven does.
 * Tycho is in use when a pom names `tycho-maven-plugin` or `.mvn/extensions.xml` loads
 * `tycho-build` (a pomless build, where a module folder with `category.xml` and no pom is an
 * eclipse-repository module).
 */
function scanTycho(root: string): TychoScan {
  const extensions = path.join(root, '.mvn', 'extensions.xml');
  const pomless = fs.existsSync(extensions) && fs.readFileSync(extensions, 'utf8').includes('tycho-build');
  const scan: TychoScan = { usesTycho: pomless, repositories: [], tychoVersion: null };
  const seen = new Set<string>();
  const visit = (dir: string, depth: number): void => {
    const real = path.resolve(dir);
    if (seen.has(real) || depth > 8 || !real.startsWith(path.resolve(root))) return;
    seen.add(real);
    const pomFile = path.join(dir, 'pom.xml');
    if (!fs.existsSync(pomFile)) {
      if (pomless && fs.existsSync(path.join(dir, 'category.xml'))) scan.repositories.push({ dir, pom: null });
      return;
    }
    const raw = fs.readFileSync(pomFile, 'utf8');
    if (raw.includes('tycho-maven-plugin')) scan.usesTycho = true;
    const pom = readPom(pomFile);
    if (!pom) return;
    const props = pom.properties ?? {};
    scan.tychoVersion ??= text(props['tycho-version']) ?? text(props['tycho.version']) ?? null;
    if (text(pom.packaging) === 'eclipse-repository') scan.repositories.push({ dir, pom });
    for (const m of pom.modules?.module ?? []) {
      const name = text(m);
      if (name) visit(path.join(dir, name), depth + 1);
    }
  };
  visit(root, 0);
  return scan;
}

/** `knime.yml` files at the root or up to three folders down. */
function findKnimeYml(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isFile() && e.name === 'knime.yml') found.push(dir);
      else if (e.isDirectory() && depth < 3 && !SKIP.has(e.name) && !e.name.startsWith('.')) walk(path.join(dir, e.name), depth + 1);
    }
  };
  walk(root, 0);
  return found.sort();
}

function tychoBuild(root: string, scan: TychoScan, module?: string): TychoBuild {
  let repo = scan.repositories[0];
  if (module !== undefined) {
    repo = scan.repositories.find((r) => rel(root, r.dir) === module.replace(/\/+$/, '').replace(/^\.\/?/, ''));
    if (!repo) throw new UsageError(`--module ${module} is not an eclipse-repository module of this build (found: ${scan.repositories.map((r) => rel(root, r.dir) || '.').join(', ') || 'none'})`);
  } else if (scan.repositories.length > 1) {
    throw new UsageError(
      `this Tycho build has ${scan.repositories.length} eclipse-repository modules (${scan.repositories.map((r) => rel(root, r.dir) || '.').join(', ')}): choose the update site with --module <dir>`,
    );
  }
  if (!repo) {
    throw new UsageError(
      'found a Maven Tycho build but no module with <packaging>eclipse-repository</packaging> (the module that assembles the update site in target/repository); add one, or pass --module',
    );
  }
  const dir = rel(root, repo.dir);
  const prefix = dir ? `${dir}/` : '';
  const artifactId = text(repo.pom?.artifactId) ?? path.basename(repo.dir);
  const version = text(repo.pom?.version) ?? text(repo.pom?.parent?.version);
  const finalName = text(repo.pom?.build?.finalName);
  const wrapper = fs.existsSync(path.join(root, 'mvnw'));
  // Tycho 5 needs Java 21; Tycho 2 to 4 run on 17.
  const major = Number(/^(\d+)/.exec(scan.tychoVersion ?? '')?.[1] ?? '5');
  return {
    kind: 'tycho',
    command: `${wrapper ? './mvnw' : 'mvn'} --batch-mode --no-transfer-progress verify`,
    module: dir,
    site: `${prefix}target/repository`,
    archiveGlob: `${prefix}target/*.zip`,
    archiveName: finalName && !finalName.includes('${') ? `${finalName}.zip` : version && !version.includes('${') ? `${artifactId}-${version}.zip` : null,
    javaVersion: major >= 5 ? '21' : '17',
  };
}

function pythonBuild(root: string, dirs: string[], module?: string): PythonBuild {
  let dir = dirs[0];
  if (module !== undefined) {
    dir = dirs.find((d) => (rel(root, d) || '.') === (module.replace(/\/+$/, '').replace(/^\.\//, '') || '.'));
    if (!dir) throw new UsageError(`--module ${module} holds no knime.yml (found: ${dirs.map((d) => rel(root, d) || '.').join(', ')})`);
  } else if (dirs.length > 1) {
    throw new UsageError(`found ${dirs.length} knime.yml files (${dirs.map((d) => rel(root, d) || '.').join(', ')}): choose the extension with --module <dir>`);
  }
  const pixi = path.join(root, 'pixi.toml');
  const pixiText = fs.existsSync(pixi) ? fs.readFileSync(pixi, 'utf8') : '';
  // The KNIME template's task: build = { args = [{ "arg" = "dest", … }], cmd = "build_python_extension.py … {{ dest }}" }.
  const task = /^\s*build\s*=\s*(.*build_python_extension.*)$/m.exec(pixiText)?.[1] ?? null;
  // Only a task that takes the destination can write where the pipeline expects the site; any
  // other project runs the bundler from a conda environment as the platform's guide documents.
  const takesDest = task !== null && /args\s*=/.test(task) && task.includes('{{');
  return {
    kind: 'python',
    extension: rel(root, dir!) || '.',
    runner: takesDest ? 'pixi' : 'conda',
    pixiTask: task !== null,
    site: PYTHON_SITE,
    archive: PYTHON_ARCHIVE,
  };
}

export interface DetectOptions {
  /** Which build when the repository has both. */
  build?: 'tycho' | 'python';
  /** The eclipse-repository module or the knime.yml folder when there are several. */
  module?: string;
}

/** The build of the repository at `root`, or a UsageError saying what was looked for. */
export function detectBuild(root: string, options: DetectOptions = {}): Build {
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw new UsageError(`${root} is not a folder`);
  const scan = scanTycho(root);
  const tycho = scan.usesTycho;
  const knime = findKnimeYml(root);
  const python = knime.length > 0;
  if (options.build === 'tycho' || (tycho && !python && options.build !== 'python')) {
    if (!tycho) throw new UsageError('--build tycho: no Maven Tycho build here (no pom.xml naming tycho-maven-plugin, no .mvn/extensions.xml loading tycho-build)');
    return tychoBuild(root, scan, options.module);
  }
  if (options.build === 'python' || (python && !tycho)) {
    if (!python) throw new UsageError('--build python: no knime.yml here (looked at the root and three folders down)');
    return pythonBuild(root, knime, options.module);
  }
  if (tycho && python) {
    throw new UsageError(
      `found both a Maven Tycho build and a knime.yml (${knime.map((d) => rel(root, d) || '.').join(', ')}): choose which builds the update site with --build tycho or --build python`,
    );
  }
  throw new UsageError(
    `no update site build found in ${root}: looked for a Maven Tycho build (pom.xml using tycho-maven-plugin, or .mvn/extensions.xml with tycho-build, and an eclipse-repository module) and for a pure-Python extension (knime.yml at the root or up to three folders down). Run pier ci init at the repository root or pass --dir`,
  );
}
