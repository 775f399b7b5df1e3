// `npm run bench crawl`: crawls a generated update site of 200 bundles / 2,000 nodes over HTTP and
// compares the time with `unzip -p` extracting the same entries from the same jars on disk (the I/O
// floor; target <= 3x), and reports the crawler's peak RSS (target <= 256 MB).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { buildSite, type BundleSpec, exampleSpec, type NodeSpec } from '../test/helpers/p2-fixtures.js';
import { serveDir } from '../test/publishing/crawler/serve.js';
import { tempDir } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BUNDLES = 200;
const NODES_PER_BUNDLE = 10;
const SCHEMAS = ['dtd', 'v2.8', 'v3.1', 'v4.1'] as const;

function site(dir: string) {
  const spec = exampleSpec('jar', 'org.bench');
  const bundles: BundleSpec[] = Array.from({ length: BUNDLES }, (_, b) => ({
    id: `org.bench.b${b}`,
    version: '1.0.0.v20260101',
    nodes: Array.from({ length: NODES_PER_BUNDLE }, (_, n): NodeSpec => ({
      factoryClass: `org.bench.b${b}.N${n}NodeFactory`,
      categoryPath: '/community/example',
      name: `Bench Node ${b}.${n}`,
      shortDescription: `Node ${n} of bundle ${b}.`,
      schema: SCHEMAS[(b + n) % 4]!,
    })),
  }));
  spec.bundles = [spec.bundles[0]!, ...bundles];
  spec.features[0]!.bundles = spec.bundles.map((b) => b.id);
  spec.features.pop();
  buildSite(dir, spec);
}

function child(url: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, ['--import', 'tsx', 'bench/crawl-child.ts', url]);
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The same entries the crawler reads, extracted by Info-ZIP's unzip from the files on disk. */
function unzipFloor(dir: string): number {
  const t0 = performance.now();
  spawnSync('unzip', ['-p', path.join(dir, 'content.jar')], { stdio: ['ignore', 'ignore', 'inherit'] });
  spawnSync('unzip', ['-p', path.join(dir, 'artifacts.jar')], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (const jar of fs.readdirSync(path.join(dir, 'plugins'))) {
    const r = spawnSync('unzip', ['-p', path.join(dir, 'plugins', jar), 'plugin.xml', '*.xml', '*.png'], { stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0 && r.status !== 11) throw new Error(`unzip failed: ${r.stderr}`);
  }
  return performance.now() - t0;
}

export async function benchCrawl(): Promise<string> {
  const root = tempDir('pier-bench-crawl-');
  site(path.join(root, 'site'));
  const server = await serveDir(root);
  const ours: { ms: number; maxRssKb: number; nodes: number }[] = [];
  const floor: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      // Asynchronous: the site's HTTP server runs in this process.
      const r = await child(`${server.url}/site/`);
      if (r.status !== 0) throw new Error(`crawl child failed: ${r.stderr}`);
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
      if (out.nodes !== BUNDLES * NODES_PER_BUNDLE) throw new Error(`expected ${BUNDLES * NODES_PER_BUNDLE} nodes, crawled ${out.nodes}`);
      ours.push(out);
      floor.push(unzipFloor(path.join(root, 'site')));
    }
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
  const oursMs = median(ours.map((o) => o.ms));
  const floorMs = median(floor);
  const rssMb = Math.max(...ours.map((o) => o.maxRssKb)) / 1024;
  return [
    `site: ${BUNDLES} bundles, ${BUNDLES * NODES_PER_BUNDLE} nodes (descriptions in 4 schema generations), ${ROUNDS} rounds, medians`,
    `crawler over HTTP: ${oursMs.toFixed(0)} ms   unzip -p same entries from disk: ${floorMs.toFixed(0)} ms   ratio ${(oursMs / floorMs).toFixed(2)}x (target <= 3x)`,
    `crawler peak RSS (whole process): ${rssMb.toFixed(0)} MB (target <= 256 MB)`,
  ].join('\n');
}
