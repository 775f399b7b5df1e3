/**
 * The local site check before any upload: the built site is served on a
 * throwaway loopback-only HTTP server and read by the crawler itself (crawler/crawl.ts, the
 * same P2 reading the server's crawl does: metadata parses, every artifact present, jars
 * readable), so "passes here" means "passes there". On top, every artifact the metadata lists
 * is checked against its recorded size and checksums (the crawl reads only bundles that may
 * hold nodes), as P2 checks each artifact it downloads.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type CrawlResult, crawlRepository, DEFAULT_CRAWL_LIMITS } from '../../publishing/crawler/crawl.js';
import { readRepository } from '../../publishing/crawler/p2.js';
import { type CrawlProblem, ProblemList } from '../../publishing/crawler/problems.js';
import type { LocalTree } from './local-site.js';

export interface SiteCheck {
  /** Problems of the site (paths relative to it); `fatal` and `error` ones refuse the publish. */
  problems: CrawlProblem[];
  summary: CrawlResult['summary'];
}

export const blocking = (p: CrawlProblem) => p.severity === 'fatal' || p.severity === 'error';

/** Serves the files of `tree` (nothing else: only the listed paths) on 127.0.0.1 until closed. */
async function serveTree(tree: LocalTree): Promise<{ url: string; close(): Promise<void> }> {
  const files = new Map(tree.files.map((f) => [f.path, f.abs] as const));
  const server = http.createServer((req, res) => {
    let rel: string;
    try {
      rel = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname).replace(/^\/+/, '');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const abs = files.get(rel);
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !abs) {
      res.writeHead(req.method === 'GET' || req.method === 'HEAD' ? 404 : 405).end();
      return;
    }
    fs.stat(abs, (err, st) => {
      if (err) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-length': st.size, 'content-type': 'application/octet-stream' });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(abs).on('error', () => res.destroy()).pipe(res);
    });
  });
  // Loopback only, on a port the system picks: nothing outside this machine can read the site.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function digest(algo: string, abs: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash(algo);
    fs.createReadStream(abs)
      .on('data', (c) => hash.update(c))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

export async function checkSite(tree: LocalTree): Promise<SiteCheck> {
  const served = await serveTree(tree);
  try {
    const result = await crawlRepository(served.url, DEFAULT_CRAWL_LIMITS, served.url);
    const problems = new ProblemList();
    for (const p of result.problems) problems.add(p);
    // The artifact repository once more, for every artifact's size and checksums.
    const limits = { ...DEFAULT_CRAWL_LIMITS, origin: new URL(served.url).origin, scope: served.url, budget: { left: DEFAULT_CRAWL_LIMITS.maxRequests } };
    const repo = await readRepository(served.url, new ProblemList(), limits);
    const reported = new Set(result.problems.map((p) => p.where));
    const byPath = new Map(tree.files.map((f) => [f.path, f] as const));
    for (const a of repo.artifacts.values()) {
      if (reported.has(a.url) || !a.url.startsWith(served.url)) continue;
      const rel = decodeURIComponent(a.url.slice(served.url.length));
      const file = byPath.get(rel);
      const name = `${a.id}_${a.version}`;
      if (!file) {
        problems.add({ severity: 'error', code: 'artifact_missing', message: `artifact ${a.classifier}/${a.id}/${a.version} is listed in the artifact repository but not in the site`, where: a.url });
        continue;
      }
      const mismatch =
        (a.size !== null && a.size !== file.size && `size (${file.size} bytes, metadata says ${a.size})`) ||
        (a.sha256 && (file.sha256 ?? (await digest('sha256', file.abs))) !== a.sha256 && 'sha-256') ||
        (!a.sha256 && a.md5 && (await digest('md5', file.abs)) !== a.md5 && 'md5') ||
        null;
      if (mismatch) problems.add({ severity: 'error', code: 'checksum_mismatch', message: `${mismatch} of ${name} differs from the artifacts metadata`, where: a.url });
    }
    // Locations as the vendor knows them: paths in the site folder, not the throwaway URL.
    const local = (s: string) => s.split(served.url).join(`${tree.root.replace(/\/*$/, '')}${path.sep}`);
    const list = problems.items.map((p) => ({ ...p, message: local(p.message), where: local(p.where) }));
    return { problems: list, summary: { ...result.summary, problems: list.length, fatal: list.some((p) => p.severity === 'fatal') } };
  } finally {
    await served.close();
  }
}
