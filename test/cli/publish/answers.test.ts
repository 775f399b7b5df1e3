/**
 * Every answer the vendor's `pier` reads from a server is bounded (src/cli/server-answer.ts): a
 * wrong or hostile `--server` that answers without end gets a clear error, and `pier` stops
 * reading at the limit instead of holding the whole answer in memory.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { ANSWER_LIMITS, AnswerTooLargeError, readAnswer } from '../../../src/cli/server-answer.js';
import { buildVendorCli } from '../../../src/cli/vendor-build.js';
import { tempDir } from '../../helpers/db.js';
import { freePort } from '../../helpers/net.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { type Ran, runPier, vendorEnv } from './stack.js';

const CHUNK = 64 * 1024;

/** A body of `chunks` (sizes in bytes), counting what the reader pulled from it. */
function streamed(sizes: number[], headers: Record<string, string> = {}): { res: Response; pulled: () => number } {
  let pulled = 0;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i >= sizes.length) return controller.close();
      const n = sizes[i++]!;
      pulled += n;
      controller.enqueue(new Uint8Array(n).fill(0x61));
    },
  });
  return { res: new Response(body, { headers }), pulled: () => pulled };
}

describe('readAnswer: the one bounded reader', () => {
  test('property: the whole text when it fits, else AnswerTooLargeError having pulled at most one chunk past the limit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 40 }), fc.integer({ min: 0, max: 60_000 }), async (sizes, limit) => {
        const { res, pulled } = streamed(sizes);
        const total = sizes.reduce((a, b) => a + b, 0);
        if (total <= limit) {
          assert.equal(await readAnswer(res, 'x', limit), 'a'.repeat(total));
        } else {
          await assert.rejects(readAnswer(res, 'x', limit), (e: unknown) => e instanceof AnswerTooLargeError && e.limitBytes === limit);
          assert.ok(pulled() <= limit + Math.max(0, ...sizes), `${pulled()} pulled for a limit of ${limit}`);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('an endless body is cancelled at the limit; a Content-Length over the limit is refused before reading', async () => {
    const endless = streamed(new Array(1_000_000).fill(CHUNK));
    await assert.rejects(readAnswer(endless.res, 'GET /api/publishing', ANSWER_LIMITS.info), /GET \/api\/publishing: the answer is larger than 1 MiB; stopped reading it/);
    assert.ok(endless.pulled() <= ANSWER_LIMITS.info + CHUNK, String(endless.pulled()));
    const declared = streamed([10, 10], { 'content-length': String(ANSWER_LIMITS.info + 1) });
    await assert.rejects(readAnswer(declared.res, 'GET /api/publishing', ANSWER_LIMITS.info), AnswerTooLargeError);
    assert.equal(declared.pulled(), 0);
  });

  test("no other read of a response body in the vendor CLI's sources (what the one-file bundle is built from)", () => {
    const files = ['src/cli/vendor.ts', ...['src/cli/publish', 'src/cli/ci-init'].flatMap((d) => fs.readdirSync(d).map((f) => path.join(d, f)))];
    for (const f of files) {
      const text = fs.readFileSync(f, 'utf8');
      assert.doesNotMatch(text, /\.(json|text|arrayBuffer|blob|formData)\(\)|\.getReader\(|\bres(ponse)?\.body\b/, f);
    }
  });
});

/**
 * A server that is not what `pier publish` expects: `/api/publishing` answers as `mode` says,
 * a label's file list answers without end. Writes wait for the client (backpressure), so what
 * it wrote is what the client took in, give or take the sockets' buffers.
 */
async function hostileServer(mode: () => 'padded' | 'endless' | 'ok', sftpPort: number) {
  let written = 0;
  const endless = (res: http.ServerResponse) => {
    const chunk = Buffer.alloc(CHUNK, 0x20);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"label":"5.4","files":[],"pad":"');
    const more = () => {
      while (!res.destroyed) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
    };
    res.on('close', () => res.destroy());
    more();
  };
  const info = { baseUrl: 'x', downloadUrl: 'x', sftp: { host: '127.0.0.1', port: sftpPort, hostKeys: [] } };
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/api/products/')) return endless(res);
    const m = mode();
    if (m === 'endless') return endless(res);
    const body = JSON.stringify(m === 'padded' ? { ...info, pad: ' '.repeat(40 * 1024 * 1024) } : info);
    written += body.length;
    // Chunked: no Content-Length to refuse it by.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    written: () => written,
    reset: () => {
      written = 0;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function runNode(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('pier publish against a server whose answers never end', () => {
  let work: string;
  let site: string;
  let bundle: string;
  let mode: 'padded' | 'endless' | 'ok' = 'padded';
  let server: Awaited<ReturnType<typeof hostileServer>>;
  const env = () => vendorEnv(work, { PIER_EDIT_TOKEN: 'pier_et_x', PIER_SFTP_PASSWORD: 'x' });
  const args = () => ['publish', '--server', server.url, '--product', 'csv-nodes', '--label', '5.4', '--site', site];
  /** Sockets and the client's own read-ahead hold a few MiB at most, never the hundreds of MiB on offer. */
  const SLACK = 32 * 1024 * 1024;

  before(async () => {
    work = tempDir('pier-answers-');
    site = path.join(work, 'site');
    buildSite(site, exampleSpec('jar'));
    // The one-file bundle, built from these sources (what the web part serves at /cli/pier.mjs).
    bundle = path.join(work, 'pier.mjs');
    await buildVendorCli(bundle);
    server = await hostileServer(() => mode, await freePort());
  });
  after(async () => {
    await server?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  test('a 40 MiB GET /api/publishing is refused with a clear error (exit 2), also by the one-file bundle', { timeout: 120_000 }, async () => {
    mode = 'padded';
    for (const run of [() => runPier(args(), env()), () => runNode(bundle, args(), env())]) {
      const r = await run();
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /GET \/api\/publishing: the answer is larger than 1 MiB; stopped reading it/);
    }
  });

  test('an endless GET /api/publishing: pier stops reading at the limit (source and bundle)', { timeout: 120_000 }, async () => {
    mode = 'endless';
    for (const run of [() => runPier(args(), env()), () => runNode(bundle, args(), env())]) {
      server.reset();
      const r = await run();
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /larger than 1 MiB/);
      assert.ok(server.written() < ANSWER_LIMITS.info + SLACK, `the server got to write ${server.written()} bytes`);
    }
  });

  test("an endless list of the label's files: exit 6 naming it, read up to its limit only", { timeout: 120_000 }, async () => {
    mode = 'ok';
    server.reset();
    const r = await runPier(args(), env());
    assert.equal(r.code, 6, r.stderr);
    assert.match(r.stderr, /reading the label's files: the answer is larger than 64 MiB; stopped reading it/);
    assert.ok(server.written() < ANSWER_LIMITS.manifest + SLACK, `the server got to write ${server.written()} bytes`);
  });
});
