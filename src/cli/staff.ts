import fs from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../infra/config.js';
import { UsageError } from '../infra/errors.js';
import { openPublishingDatabase } from '../publishing/db.js';
import { FIELD_NAMES } from '../publishing/products/fields.js';
import { productsRepository } from '../publishing/products/repository.js';
import { type ProductService, productService } from '../publishing/products/service.js';

/** Opens the same database as the server (from the environment), runs one action, closes. */
async function withProducts<T>(action: (products: ProductService) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await openPublishingDatabase(config.publishing.databaseUrl);
  try {
    return await action(productService({ repo: productsRepository(database.db, database.dialect), publishing: config.publishing }));
  } finally {
    await database.close();
  }
}

function print(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

const ONCE = 'Store these now: the edit token and SFTP password are shown only this once.';

export function registerStaffCommands(program: Command): void {
  const staff = program.command('staff').description('staff actions on the product registry (same database as the server)');

  staff
    .command('register <product-id>')
    .description('register a hidden product and issue its edit token and SFTP credentials')
    .requiredOption('--name <name>', 'product name shown on the page')
    .option('--icon <file.svg>', 'SVG icon file')
    .option('--json', 'print exactly one JSON object')
    .action(async (id: string, opts: { name: string; icon?: string; json?: boolean }) => {
      let icon: string | undefined;
      if (opts.icon) {
        try {
          icon = fs.readFileSync(opts.icon, 'utf8');
        } catch (e) {
          throw new UsageError(`cannot read icon file ${opts.icon}: ${(e as Error).message}`);
        }
      }
      const creds = await withProducts((p) => p.register(id, { name: opts.name, ...(icon !== undefined ? { icon } : {}) }));
      print(!!opts.json, creds, () =>
        [
          `Registered product "${creds.productId}" (hidden).`,
          `  page URL:      ${creds.pageUrl}`,
          `  edit token:    ${creds.editToken}`,
          `  SFTP host:     ${creds.sftp.host}`,
          `  SFTP port:     ${creds.sftp.port}`,
          `  SFTP username: ${creds.sftp.username}`,
          `  SFTP password: ${creds.sftp.password}`,
          ONCE,
        ].join('\n'),
      );
    });

  staff
    .command('list')
    .description('list products')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const list = await withProducts((p) => p.list());
      const rows = list.map((v) => ({ productId: v.productId, name: v.name, state: v.state, updatedAt: v.updatedAt, pageUrl: v.pageUrl }));
      print(!!opts.json, rows, () =>
        rows.length === 0
          ? 'No products yet. Register one with: pier staff register <product-id> --name <name>'
          : rows.map((r) => `${r.productId.padEnd(32)} ${r.state.padEnd(7)} ${r.updatedAt}  ${r.name}`).join('\n'),
      );
    });

  staff
    .command('show <product-id>')
    .description('show state, fields set and last edits')
    .option('--history', 'list every revision (time, changed fields, token id, client address)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { history?: boolean; json?: boolean }) => {
      const { product, history } = await withProducts(async (p) => ({
        product: await p.show(id),
        history: await p.history(id, opts.history ? 1000 : 5),
      }));
      const fieldsSet = FIELD_NAMES.filter((f) => product.fields[f] !== undefined);
      const revisions = history.map(({ changes: _c, ...r }) => r);
      print(!!opts.json, { ...product, fieldsSet, revisions }, () =>
        [
          `${product.productId}: ${product.name}`,
          `  state:      ${product.state}`,
          `  page URL:   ${product.pageUrl}`,
          `  created:    ${product.createdAt}`,
          `  updated:    ${product.updatedAt}`,
          `  fields set: ${fieldsSet.join(', ')}`,
          `  ${opts.history ? 'history' : 'last edits'}:${revisions.length ? '' : ' none'}`,
          ...revisions.map((r) => `    ${r.at}  token ${r.tokenId}  from ${r.clientAddress}  ${r.changedFields.join(', ')}`),
        ].join('\n'),
      );
    });

  staff
    .command('rotate-token <product-id>')
    .description('issue a new edit token; the old one stops working at once')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await withProducts((p) => p.rotateEditToken(id));
      print(!!opts.json, r, () => `New edit token for "${id}": ${r.editToken}\n${ONCE.replace(' and SFTP password are', ' is')}`);
    });

  staff
    .command('rotate-sftp-password <product-id>')
    .description('issue a new SFTP password; the old one stops working at once')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await withProducts((p) => p.rotateSftpPassword(id));
      print(!!opts.json, r, () => `New SFTP password for "${id}" (user ${r.username}): ${r.password}\nIt is shown only this once.`);
    });

  staff
    .command('set-release <version>')
    .description('set the current platform release (substituted for the page placeholder)')
    .option('--json', 'print JSON')
    .action(async (version: string, opts: { json?: boolean }) => {
      const v = await withProducts((p) => p.setPlatformRelease(version));
      print(!!opts.json, { platformRelease: v }, () => `Current platform release: ${v}`);
    });
}
