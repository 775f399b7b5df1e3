// The install section never offers a label that has no release (docs/vendors.md "Labels and the
// install section"): no URL, never recommended, even when its name is the platform release.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { installLabels } from '../../../src/publishing/web/presenter.js';

const site = { name: 'Pier', baseUrl: 'http://pier.test', downloadUrl: 'http://dl.test' };
const folder = (label: string, hasArchive = false) => ({ label, files: 3, bytes: 10, hasArchive, lastUploadAt: null, archiveBytes: hasArchive ? 5 : 0 });

test('a label with no release has no URL and is never recommended', () => {
  const labels = [folder('5.4', true), folder('5.3')];
  const rows = installLabels(site, 'csv-nodes', labels, '5.4', new Map(), undefined, new Set(['5.4']));
  const byLabel = new Map(rows.map((r) => [r.label, r]));
  assert.equal(byLabel.get('5.4')?.url, null);
  assert.equal(byLabel.get('5.4')?.unreleased, true);
  assert.equal(byLabel.get('5.4')?.recommended, false, 'named as the platform release, but nothing to install');
  assert.equal(byLabel.get('5.3')?.recommended, true);
  assert.equal(byLabel.get('5.3')?.url, 'http://dl.test/csv-nodes/5.3');
  assert.equal(byLabel.get('5.3')?.unreleased, undefined);
  // Alone and unreleased: nothing is recommended.
  assert.deepEqual(
    installLabels(site, 'csv-nodes', [folder('5.4')], '5.4', new Map(), undefined, new Set(['5.4'])).map((r) => [r.recommended, r.url]),
    [[false, null]],
  );
});
