// A product with everything a page shows, written as the SFTP server and a crawl write it, on a
// connection of its own (as another process would): uploaded labels, a workflow and a finished
// crawl with one node and its icon, which released the label (pages offer released labels only).
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { crawlsRepository } from '../../../src/publishing/crawler/repository.js';
import { NODE_SANITIZER_VERSION } from '../../../src/publishing/crawler/sanitize-node.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { tempDir } from '../../helpers/db.js';
import { releaseAsIs } from '../releases/release-as-is.js';

export const NODE_FACTORY = 'com.acme.text.TokenizerNodeFactory';
const NODE_ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" fill="#123456"/></svg>';

export interface Seeder {
  /** Records uploaded files under the product (content does not matter to pages). */
  upload(id: string, paths: string[]): Promise<void>;
  /** A finished crawl of `label` that found one node named `nodeName`, and released the label. */
  crawl(id: string, label: string, nodeName: string): Promise<void>;
  /** Releases what the labels' folders hold, as a crawl that passed does. */
  release(id: string, ...labels: string[]): Promise<void>;
  close(): Promise<void>;
}

/** `storageDir`: the site's storage (Site.storageDir), where its pages look for releases. */
export async function seeder(databaseUrl: string, storageDir = tempDir('pier-seed-')): Promise<Seeder> {
  const database = await openPublishingDatabase(databaseUrl);
  const files = filesService({ storage: localStorage(storageDir), repo: filesRepository(database.db), limits: DEFAULT_LIMITS });
  const release = (id: string, ...labels: string[]) => releaseAsIs(database.db, storageDir, id, ...labels);
  const crawls = crawlsRepository(database.db, database.dialect);
  return {
    async upload(id, paths) {
      await files.ensureTree(id);
      for (const p of paths) {
        const parts = p.split('/');
        for (let i = 2; i < parts.length; i++) await files.makeDir(id, parts.slice(0, i).join('/')).catch(() => {});
        const upload = await files.beginUpload(id, p);
        await upload.write(Buffer.from('x'), 0, 1, 0);
        await upload.commit();
      }
    },
    release,
    async crawl(id, label, nodeName) {
      await release(id, label);
      const now = new Date().toISOString();
      const description = {
        name: nodeName,
        nodeType: 'Manipulator',
        icon: null,
        shortDescription: `${nodeName} splits text.`,
        intro: 'Splits text into tokens.',
        options: [],
        tabs: [],
        inPorts: [{ index: 0, name: 'Table', description: 'Text to split.' }],
        outPorts: [],
        views: [],
        keywords: [],
        schema: 'v4.1',
      };
      await crawls.finish(
        { product_id: id, label, status: 'finished', url: `http://dl.test/${id}/${label}/`, started_at: now, finished_at: now, files_seq: 0, summary: '{}', problems: '[]', units: '[]' },
        [
          {
            product_id: id,
            label,
            factory_class: NODE_FACTORY,
            name: nodeName,
            product_name: id,
            bundle: 'com.acme.text',
            category_path: '/community/text',
            category_names: 'Community / Text',
            short_description: `${nodeName} splits text.`,
            deprecated: 0,
            data: JSON.stringify({ categoryNames: ['Community', 'Text'], description }),
            icon_type: 'image/svg+xml',
            icon: Buffer.from(NODE_ICON).toString('base64'),
            sanitized: NODE_SANITIZER_VERSION,
          },
        ],
      );
    },
    close: () => database.close(),
  };
}
