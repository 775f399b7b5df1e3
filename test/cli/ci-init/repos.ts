/**
 * Vendor repositories built by code for the `pier ci init` tests: a Maven Tycho reactor with an
 * eclipse-repository module, a pure-Python extension (knime.yml, optionally the KNIME
 * template's pixi.toml), or both.
 */
import fs from 'node:fs';
import path from 'node:path';

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

export interface TychoRepoOptions {
  /** Folder of the eclipse-repository module (default `releng/org.example.update`). */
  module?: string;
  tychoVersion?: string;
  /** More eclipse-repository modules. */
  extraRepositories?: string[];
  wrapper?: boolean;
  /** Leave the eclipse-repository module out. */
  noRepository?: boolean;
  finalName?: string;
}

export function tychoRepo(root: string, o: TychoRepoOptions = {}): string {
  const module = o.module ?? 'releng/org.example.update';
  const repos = o.noRepository ? [] : [module, ...(o.extraRepositories ?? [])];
  write(
    path.join(root, 'pom.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.example</groupId>
  <artifactId>org.example.parent</artifactId>
  <version>1.2.0-SNAPSHOT</version>
  <packaging>pom</packaging>
  <properties><tycho-version>${o.tychoVersion ?? '4.0.8'}</tycho-version></properties>
  <modules>
    <module>bundles/org.example.nodes</module>
${repos.map((m) => `    <module>${m}</module>`).join('\n')}
  </modules>
  <build><plugins><plugin>
    <groupId>org.eclipse.tycho</groupId><artifactId>tycho-maven-plugin</artifactId>
    <version>\${tycho-version}</version><extensions>true</extensions>
  </plugin></plugins></build>
</project>
`,
  );
  write(
    path.join(root, 'bundles/org.example.nodes/pom.xml'),
    `<project><modelVersion>4.0.0</modelVersion><parent><groupId>org.example</groupId><artifactId>org.example.parent</artifactId><version>1.2.0-SNAPSHOT</version><relativePath>../..</relativePath></parent><artifactId>org.example.nodes</artifactId><packaging>eclipse-plugin</packaging></project>\n`,
  );
  for (const m of repos) {
    write(
      path.join(root, m, 'pom.xml'),
      `<project><modelVersion>4.0.0</modelVersion><parent><groupId>org.example</groupId><artifactId>org.example.parent</artifactId><version>1.2.0-SNAPSHOT</version></parent><artifactId>${path.basename(m)}</artifactId><packaging>eclipse-repository</packaging>${o.finalName ? `<build><finalName>${o.finalName}</finalName></build>` : ''}</project>\n`,
    );
    write(path.join(root, m, 'category.xml'), '<site><feature id="org.example.feature"/></site>\n');
  }
  if (o.wrapper) write(path.join(root, 'mvnw'), '#!/bin/sh\n');
  return root;
}

export interface PythonRepoOptions {
  /** Folder of knime.yml relative to the root (default: the root, as in the KNIME template). */
  extension?: string;
  /** The KNIME template's pixi.toml with its `build` task (`dest` argument). */
  pixi?: 'template' | 'no-args' | false;
}

export function pythonRepo(root: string, o: PythonRepoOptions = {}): string {
  const ext = path.join(root, o.extension ?? '.');
  write(
    path.join(ext, 'knime.yml'),
    'name: example\nauthor: Example Inc.\nextension_module: src/extension\ndescription: Example nodes\ngroup_id: org.example\nversion: 1.2.0\nvendor: Example Inc.\nlicense_file: LICENSE.TXT\n',
  );
  write(path.join(ext, 'src/extension.py'), 'import knime.extension as knext\n');
  if (o.pixi === 'template') {
    write(
      path.join(root, 'pixi.toml'),
      '[workspace]\nchannels = ["knime", "conda-forge"]\nplatforms = ["linux-64"]\n\n[feature.build.dependencies]\nknime-extension-bundling = "5.5.*"\n\n[feature.build.tasks]\nbuild = { args = [{ "arg" = "dest", "default" = "../my_update_site" }], cmd = "build_python_extension.py --knime-build . {{ dest }}"}\n\n[environments]\nbuild = {features = ["build"], no-default-feature = true}\n',
    );
  } else if (o.pixi === 'no-args') {
    write(path.join(root, 'pixi.toml'), '[tasks]\nbuild = "build_python_extension.py . ../my_update_site"\n');
  }
  return root;
}
