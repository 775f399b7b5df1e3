// The big node catalog of `npm run bench hostile-load` ("catalog" and "search" attacks): crawl
// rows as the crawler stores them (crawler/service.ts nodeRows), generated rather than crawled,
// so that seeding 12 labels of 4,000 nodes takes seconds, not the minutes a crawl of 48,000
// node descriptions in jars would. Each label differs a little from the one before it (nodes
// added, removed, deprecated, with a new option or text), as real successive labels do, so the
// changes page between two of them has something in every bucket.
import { NODE_SANITIZER_VERSION } from '../src/publishing/crawler/sanitize-node.js';
import type { CrawlNodeRow, CrawlRow } from '../src/publishing/crawler/repository.js';

const WORDS = ['table', 'column', 'filter', 'reader', 'writer', 'join', 'pivot', 'text', 'image', 'model', 'learner', 'predictor', 'chart', 'string', 'date', 'json', 'xml', 'database', 'cluster', 'score'];
const TYPES = ['Data', 'Model', 'Image', 'Flow Variable', 'Database'];

const word = (n: number) => WORDS[n % WORDS.length] as string;
const title = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Labels named like platform releases, lowest first: `5.0` … `5.<count-1>`. */
export function catalogLabels(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `5.${i}`);
}

/**
 * The nodes of label number `labelIndex` (0 = the lowest): `count` nodes of ~900 bytes of
 * description each (a 4,000-node label is about 3.5 MB, as in the report this bench repeats).
 */
export function catalogNodes(productId: string, productName: string, label: string, labelIndex: number, count: number): CrawlNodeRow[] {
  const rows: CrawlNodeRow[] = [];
  // Every label drops its first `labelIndex * 5` nodes and adds as many at the end.
  const first = labelIndex * 5;
  for (let k = first; k < first + count; k++) {
    const name = `${title(word(k))} ${title(word(k >> 3))} ${k}`;
    const category = ['Community', title(word(k >> 5)), title(word(k >> 7))];
    // A node changes now and then from one label to the next: an option added, its text edited.
    const revision = Math.floor((labelIndex + (k % 7)) / 7);
    const options = Array.from({ length: 4 + (revision % 3) }, (_, o) => ({
      name: `${title(word(k + o))} option ${o}`,
      description: `<p>Chooses how the ${word(k + o)} of each row is handled (revision ${revision}). ${'Rows that do not match are left out. '.repeat(2)}</p>`,
    }));
    const description = {
      name,
      nodeType: 'Manipulator',
      icon: null,
      shortDescription: `${title(word(k))} rows by their ${word(k + 1)} and ${word(k + 2)}.`,
      intro: `<p>This node ${word(k)}s the input ${word(k + 3)} and writes the result to its output. ${'It keeps the order of the rows. '.repeat(3)}</p>`,
      options,
      tabs: [],
      inPorts: [{ index: 0, name: `Input ${word(k)}`, description: '<p>The rows to read.</p>', dynamicGroup: null }],
      outPorts: [{ index: 0, name: `${TYPES[(k + revision) % TYPES.length]} output`, description: '<p>The rows written.</p>', dynamicGroup: null }],
      views: [],
      keywords: [word(k + 4), word(k + 5)],
      schema: 'v4.1',
      markup: 'html',
    };
    const categoryNames = category.join(' / ');
    rows.push({
      product_id: productId,
      label,
      factory_class: `org.bench.catalog.node${k}.${title(word(k))}NodeFactory`,
      name,
      product_name: productName,
      bundle: 'org.bench.catalog',
      category_path: `/community/${word(k >> 5)}/${word(k >> 7)}`,
      category_names: categoryNames,
      short_description: description.shortDescription,
      deprecated: k % 97 === labelIndex % 97 ? 1 : 0,
      data: JSON.stringify({ bundleVersion: `1.${labelIndex}.0`, hidden: false, after: null, categoryNames: category, description, platforms: null }),
      icon_type: null,
      icon: null,
      sanitized: NODE_SANITIZER_VERSION,
    });
  }
  return rows;
}

/** The finished crawl that stored `nodes` for `label`. */
export function catalogCrawl(productId: string, label: string, url: string, nodes: number, filesSeq: number): CrawlRow {
  const now = new Date().toISOString();
  return {
    product_id: productId,
    label,
    status: 'finished',
    url,
    started_at: now,
    finished_at: now,
    files_seq: filesSeq,
    summary: JSON.stringify({ units: 0, features: 0, bundles: 1, categories: 0, nodes, nodeSets: 0, problems: 0, fatal: false }),
    problems: '[]',
    units: '[]',
    platform_range: null,
  };
}
