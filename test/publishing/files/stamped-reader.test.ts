// A product's label totals (a grouped read of every file row, tens of thousands for a big label)
// are read once per change of its files, whoever asks (pages, crawls, releases, notices), and
// readers asking together share one read (files/stamped-reader.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LabelSummary, ProductFilesReader } from '../../../src/publishing/files/reader.js';
import { stampedFiles } from '../../../src/publishing/files/stamped-reader.js';

function countingReader() {
  const stamps = new Map<string, number>();
  let reads = 0;
  let release: (() => void) | null = null;
  let hold = false;
  const reader: ProductFilesReader = {
    async listLabels(productId) {
      reads++;
      if (hold) await new Promise<void>((r) => (release = r));
      const n = stamps.get(productId) ?? 0;
      return [{ label: `l${n}`, files: n, bytes: 0, hasArchive: false, lastUploadAt: null, archiveBytes: 0 } satisfies LabelSummary];
    },
    async listFiles() {
      reads++;
      return [];
    },
    async countFiles() {
      reads++;
      return 0;
    },
    async changeStamp(productId) {
      const n = stamps.get(productId);
      return n === undefined ? null : String(n);
    },
  };
  return {
    reader,
    reads: () => reads,
    change: (productId: string) => stamps.set(productId, (stamps.get(productId) ?? 0) + 1),
    holdReads: (on: boolean) => {
      hold = on;
    },
    releaseRead: () => release?.(),
  };
}

test('labels are read once per change of the files, per product', async () => {
  const c = countingReader();
  const files = stampedFiles(c.reader);
  c.change('p');
  assert.equal((await files.listLabels('p'))[0]!.label, 'l1');
  await files.listLabels('p');
  await files.listLabels('p');
  assert.equal(c.reads(), 1);
  c.change('p');
  assert.equal((await files.listLabels('p'))[0]!.label, 'l2');
  assert.equal(c.reads(), 2);
  // Another product has its own.
  await files.listLabels('q');
  await files.listLabels('q');
  assert.equal(c.reads(), 3);
});

test('readers asking while the labels are read share that read', async () => {
  const c = countingReader();
  const files = stampedFiles(c.reader);
  c.change('p');
  c.holdReads(true);
  const asks = [files.listLabels('p'), files.listLabels('p'), files.listLabels('p')];
  await new Promise((r) => setImmediate(r));
  c.releaseRead();
  const answers = await Promise.all(asks);
  assert.equal(c.reads(), 1);
  assert.deepEqual(
    answers.map((a) => a[0]!.label),
    ['l1', 'l1', 'l1'],
  );
});
