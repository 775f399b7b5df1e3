// `pier staff label-notice`: set or clear a label's notice for a vendor, e.g. one who
// lost their edit token, or to undo a withdrawal. The same rules as the vendor's PATCH apply.
import type { Command } from 'commander';
import { UsageError } from '../infra/errors.js';
import type { ProductService } from '../publishing/products/service.js';

interface Options {
  deprecate?: boolean;
  withdraw?: boolean;
  clear?: boolean;
  message?: string;
  replacement?: string;
  json?: boolean;
}

export function registerLabelNoticeCommand(staff: Command, withProducts: <T>(action: (p: ProductService) => Promise<T>) => Promise<T>): void {
  staff
    .command('label-notice <product-id> <label>')
    .description("deprecate or withdraw a label (as the vendor's PATCH of `labels` does), or --clear its notice")
    .option('--deprecate', 'mark the label deprecated (still offered, with a banner)')
    .option('--withdraw', 'withdraw the label: not offered, its URLs answer 410 Gone; files are kept')
    .option('--clear', 'remove the notice (undoes a withdrawal)')
    .option('--message <text>', 'plain text, one paragraph, at most 500 characters')
    .option('--replacement <label>', 'the label to use instead')
    .option('--json', 'print JSON')
    .action(async (id: string, label: string, opts: Options) => {
      const chosen = [opts.deprecate, opts.withdraw, opts.clear].filter(Boolean).length;
      if (chosen !== 1) throw new UsageError('choose exactly one of --deprecate, --withdraw, --clear');
      if (opts.clear && (opts.message !== undefined || opts.replacement !== undefined)) throw new UsageError('--clear takes no --message or --replacement');
      const notice = opts.clear
        ? null
        : {
            status: opts.withdraw ? ('withdrawn' as const) : ('deprecated' as const),
            ...(opts.message !== undefined ? { message: opts.message } : {}),
            ...(opts.replacement !== undefined ? { replacement: opts.replacement } : {}),
          };
      const result = await withProducts((p) => p.staffPatch(id, { labels: { [label]: notice } }));
      const stored = result.product.fields.labels?.[label] ?? null;
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ productId: id, label, notice: stored }, null, 2)}\n`
          : `${stored ? `Label ${label} of ${id} is ${stored.status} since ${stored.since}${stored.replacement ? `; replacement ${stored.replacement}` : ''}.` : `Label ${label} of ${id} has no notice.`}\n`,
      );
    });
}
