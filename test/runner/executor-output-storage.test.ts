import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { NotFoundError, PayloadTooLargeError, ValidationError } from '../../src/infra/errors.js';
import { randomUUID } from '../../src/infra/secrets.js';
import { LocalRunOutputStorage, outputNameProblem } from '../../src/runner/runs/output-storage.js';
import { tempDir } from '../helpers/db.js';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('run output storage (local)', () => {
  test('saves under outputs/<runId>/<attempt>/<name>, reports size and sha256, opens it again', async () => {
    const dir = tempDir();
    const storage = new LocalRunOutputStorage(dir);
    const runId = randomUUID();
    const body = 'line 1\nline 2\n'.repeat(1000);
    const stored = await storage.save(runId, 1, 'result.csv', Readable.from([Buffer.from(body.slice(0, 7)), Buffer.from(body.slice(7))]), 1e6);
    assert.deepEqual(stored, { size: Buffer.byteLength(body), sha256: sha(body) });
    assert.equal(fs.readFileSync(path.join(dir, 'outputs', runId, '1', 'result.csv'), 'utf8'), body);
    assert.equal(await text(await storage.open(runId, 1, 'result.csv')), body);
  });

  test('a second upload of the same name replaces the first whole', async () => {
    const storage = new LocalRunOutputStorage(tempDir());
    const runId = randomUUID();
    await storage.save(runId, 1, 'a.txt', Readable.from(['first version, longer']), 100);
    await storage.save(runId, 1, 'a.txt', Readable.from(['second']), 100);
    assert.equal(await text(await storage.open(runId, 1, 'a.txt')), 'second');
  });

  test('beyond the size limit: PayloadTooLargeError, no file and no temporary left', async () => {
    const dir = tempDir();
    const storage = new LocalRunOutputStorage(dir);
    const runId = randomUUID();
    await assert.rejects(storage.save(runId, 1, 'big.bin', Readable.from([Buffer.alloc(60), Buffer.alloc(60)]), 100), PayloadTooLargeError);
    await assert.rejects(storage.open(runId, 1, 'big.bin'), NotFoundError);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs', '.tmp')), []);
    // Exactly at the limit is fine.
    assert.equal((await storage.save(runId, 1, 'big.bin', Readable.from([Buffer.alloc(100)]), 100)).size, 100);
  });

  test('a failing source leaves the earlier file in place and no temporary', async () => {
    const dir = tempDir();
    const storage = new LocalRunOutputStorage(dir);
    const runId = randomUUID();
    await storage.save(runId, 1, 'a.txt', Readable.from(['kept']), 100);
    const broken = new Readable({
      read() {
        this.push('partial');
        this.destroy(new Error('connection reset'));
      },
    });
    await assert.rejects(storage.save(runId, 1, 'a.txt', broken, 100), /connection reset/);
    assert.equal(await text(await storage.open(runId, 1, 'a.txt')), 'kept');
    assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs', '.tmp')), []);
  });

  test('missing output → NotFoundError; attempts are apart; removeAttempt and removeRun delete, missing is fine', async () => {
    const dir = tempDir();
    const storage = new LocalRunOutputStorage(dir);
    const runId = randomUUID();
    await assert.rejects(storage.open(runId, 1, 'nope'), NotFoundError);
    await storage.save(runId, 1, 'a', Readable.from(['1']), 10);
    await storage.save(runId, 2, 'a', Readable.from(['2']), 10);
    await storage.removeAttempt(runId, 1);
    await storage.removeAttempt(runId, 1);
    await assert.rejects(storage.open(runId, 1, 'a'), NotFoundError);
    assert.equal(await text(await storage.open(runId, 2, 'a')), '2');
    // A file stored before outputs were kept per attempt is still found.
    fs.writeFileSync(path.join(dir, 'outputs', runId, 'old.txt'), 'legacy');
    assert.equal(await text(await storage.open(runId, 2, 'old.txt')), 'legacy');
    // An output named like an attempt directory is no file.
    await assert.rejects(storage.open(runId, 3, '2'), NotFoundError);
    // A received upload is invisible until placed; discarded, it leaves nothing.
    const received = await storage.receive(runId, Readable.from(['tmp']), 10);
    await assert.rejects(storage.open(runId, 2, 'tmp.txt'), NotFoundError);
    await storage.discard(received);
    assert.deepEqual(fs.readdirSync(path.join(dir, 'outputs', '.tmp')), []);
    await storage.removeRun(runId);
    await storage.removeRun(runId);
    assert.equal(fs.existsSync(path.join(dir, 'outputs', runId)), false);
  });

  test('hostile names are refused before touching the disk', async () => {
    const dir = tempDir();
    const storage = new LocalRunOutputStorage(dir);
    const runId = randomUUID();
    for (const name of ['', '.', '..', '../x', 'a/b', 'a\\b', 'a\u0000b', 'a\nb', 'x'.repeat(201)]) {
      await assert.rejects(storage.save(runId, 1, name, Readable.from(['x']), 10), ValidationError, JSON.stringify(name));
      await assert.rejects(storage.open(runId, 1, name), ValidationError);
    }
    await assert.rejects(storage.removeRun('../etc'), /invalid run id/);
    assert.equal(fs.existsSync(path.join(dir, 'outputs', runId)), false);
  });

  test('property: an accepted name always stays one entry inside the run directory', () => {
    const root = path.resolve('/srv/outputs/run');
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 260 }), (name) => {
        if (outputNameProblem(name) !== null) return;
        const full = path.resolve(root, name);
        assert.equal(path.dirname(full), root);
        assert.notEqual(full, root);
        assert.ok(Buffer.byteLength(name) <= 200);
      }),
      { numRuns: 2000 },
    );
  });
});
