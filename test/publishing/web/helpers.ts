import { loadConfig } from '../../../src/infra/config.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { createPublishingService, type PublishingOptions, type PublishingService } from '../../../src/publishing/service.js';
import { tempDir } from '../../helpers/db.js';
import { patchProduct } from '../../helpers/publishing.js';

export const BASE_URL = 'http://pier.test';
export const DOWNLOAD_URL = 'http://downloads.pier.test';

export const ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" fill="#fde68a"/><circle cx="32" cy="32" r="20" fill="#b45309"/><path d="M22 33l7 7 14-16" stroke="#fff" stroke-width="5" fill="none" stroke-linecap="round"/></svg>';

/** Every field set, as a vendor would: the page tests assert on what each one shows. */
export const FULL_FIELDS = {
  name: 'Text Tools',
  description: 'Tokenize, stem and tag text right inside your workflows',
  text: [
    '# Overview',
    '',
    'Text Tools adds nodes for text processing. Works with release {{platformRelease}}.',
    '',
    '```',
    'https://downloads.example/text-tools/{{platformRelease}}',
    '```',
    '',
    'Inline: `{{platformRelease}}`.',
    '',
    '## Features',
    '',
    '- Tokenizers for 40 languages',
    '- Part-of-speech tagging',
    '',
    '### Performance',
    '',
    'Streams rows, so memory stays flat. See [the docs](https://docs.example/text-tools).',
    '',
    '## Requirements',
    '',
    '| Item | Value |',
    '|:--|--:|',
    '| Java | 17 |',
  ].join('\n'),
  changelog: [
    '# Changelog',
    '',
    '## [Unreleased]',
    '### Added',
    '- Something upcoming',
    '',
    '## [1.2.0] - 2024-06-01',
    '### Added',
    '- Lemmatizer node',
    '### Fixed',
    '- Crash on empty documents ([#12])',
    '### Performance',
    '- Faster tokenizing',
    '',
    '## [1.1.0] - 2024-03-10',
    '### Changed',
    '- New icon set',
    '### Security',
    '- Updated a vulnerable dependency',
    '<!-- hidden note -->',
    '',
    '## [1.0.0] - 2024-01-05',
    '### Info',
    '- First public release',
    '',
    '[#12]: https://issues.example/12',
  ].join('\n'),
  license: 'MIT License\n\nCopyright (c) 2024 Ada Vendor',
  faq: '## Does it work offline?\n\nYes, nothing leaves your machine.\n\n## Which release do I need?\n\nRelease {{platformRelease}} or newer.',
  contact: { name: 'Ada Vendor', email: 'ada@vendor.example' },
  style: { color1: '#123456', color2: '#abcdef', badgeColor: '#ff8800' },
  instructions: 'Restart the platform after installing.',
  icon: ICON,
};

export interface Site {
  service: PublishingService;
  url: string;
  /** Where its files are stored (PIER_STORAGE_DIR): another instance or a seeder shares it. */
  storageDir: string;
  /** Sets a product's state as staff would, through the repository on its own connection. */
  setState(id: string, state: 'hidden' | 'live'): Promise<void>;
  register(id: string, fields?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/**
 * `pageFreshMs` 0 unless given: every page request reads the change counter, so a change made
 * through another connection shows on the very next request (the 1 ms bound of production is
 * tested in page-freshness.test.ts).
 */
export async function startSite(databaseUrl: string, options: PublishingOptions = {}, env: Record<string, string> = {}): Promise<Site> {
  const config = loadConfig({
    PIER_DATA_DIR: tempDir('pier-web-'),
    PIER_DATABASE_URL: databaseUrl,
    PIER_LOG_LEVEL: 'silent',
    PIER_BASE_URL: BASE_URL,
    PIER_DOWNLOAD_URL: DOWNLOAD_URL,
    ...env,
  });
  const service = await createPublishingService(config, { pageFreshMs: 0, ...options });
  const url = await service.app.listen({ host: '127.0.0.1', port: 0 });
  // A second connection, as the staff CLI in another process would have.
  const other = await openPublishingDatabase(databaseUrl);
  const repo = productsRepository(other.db, other.dialect);
  return {
    service,
    url,
    storageDir: config.publishing.storageDir,
    async setState(id, state) {
      await repo.setState(id, state, new Date().toISOString());
    },
    async register(id, fields = FULL_FIELDS) {
      const creds = await service.products.register(id, { name: String(fields.name ?? id) });
      const res = await patchProduct(url, id, creds.editToken, fields);
      if (res.status !== 200) throw new Error(`PATCH ${id}: ${res.status} ${JSON.stringify(res.json)}`);
      return creds.editToken;
    },
    async close() {
      await other.close();
      await service.close();
    },
  };
}
