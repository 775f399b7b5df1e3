import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { createPublishingService } from '../../../src/publishing/service.js';
import { tempDir } from '../../helpers/db.js';

/**
 * CSP `upgrade-insecure-requests` only when PIER_BASE_URL is https: over plain http a browser
 * would look for every asset over https and find nothing (browsers exempt only localhost).
 */
test('the publishing app sends upgrade-insecure-requests only when PIER_BASE_URL is https', async () => {
  for (const [base, upgrades] of [['https://pier.example', true], ['http://pier.example:8080', false]] as const) {
    const service = await createPublishingService(
      loadConfig({ PIER_DATA_DIR: tempDir('pier-csp-'), PIER_LOG_LEVEL: 'silent', PIER_BASE_URL: base, PIER_DOWNLOAD_URL: `${base}/dl` }),
    );
    try {
      const res = await service.app.inject({ method: 'GET', url: '/healthz' });
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/);
      assert.equal(/upgrade-insecure-requests/.test(csp), upgrades, `${base}: ${csp}`);
    } finally {
      await service.close();
    }
  }
});
