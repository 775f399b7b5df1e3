import fs from 'node:fs';
import type { Command } from 'commander';
import { type FileLimits, loadConfig, parseSize } from '../infra/config.js';
import { UsageError } from '../infra/errors.js';
import { platformReleases } from '../publishing/crawler/platform-range.js';
import type { LabelCrawl } from '../publishing/crawler/service.js';
import { FIELD_NAMES } from '../publishing/model/fields.js';
import type { LabelReleases } from '../publishing/releases/service.js';
import { requireDownloadHost } from './download-host.js';
import { registerLabelNoticeCommand } from './label-notice.js';
import { bindingLine, registerTrustCommands } from './staff-trust.js';
import type { withProducts as WithProducts } from './staff-services.js';

/**
 * The services of a staff command (staff-services.ts), loaded when an action runs: `pier --help`
 * and `pier staff --help` register the commands without loading the service code.
 */
const withProducts: typeof WithProducts = async (action, options) => (await import('./staff-services.js')).withProducts(action, options);

/** The SSH host key fingerprints vendors compare with their client's first-connect prompt. */
async function hostKeyFingerprints(): Promise<{ type: string; fingerprint: string }[]> {
  const { hostKeyDir, loadOrCreateHostKeys } = await import('../publishing/sftp/host-keys.js');
  return loadOrCreateHostKeys(hostKeyDir(loadConfig().publishing.storageDir)).map(({ type, fingerprint }) => ({ type, fingerprint }));
}

/** What a label's URL serves now, for `pier staff show`. */
function servingLine(l: LabelReleases): string {
  if (l.current !== null) return `serving release ${l.current}`;
  return l.releases.length > 0 ? 'serving nothing (its folder was removed: users get 404)' : 'serving nothing: no release yet (users get 404)';
}

/** `pier staff show`: each label's current release and the kept ones, with who released them. */
function releaseLines(labels: LabelReleases[]): string[] {
  if (labels.length === 0) return ['  releases:   none yet (a label is released when its upload is complete and crawls without errors)'];
  return [
    '  releases:',
    ...labels.flatMap((l) => [
      `    ${l.label}: ${servingLine(l)}`,
      ...(l.attempt
        ? [
            `      newest upload: copy ${l.attempt.number} of ${l.attempt.createdAt}, ${l.attempt.status === 'refused' ? 'release refused (its crawl found problems that make installs fail: see the crawl below)' : 'being crawled'}`,
          ]
        : []),
      ...l.releases.map((r) => {
        const by = r.releasedBy?.kind === 'trusted-publisher' ? `${r.releasedBy.repository} ${r.releasedBy.workflow} ${r.releasedBy.ref} run ${r.releasedBy.runId}` : (r.releasedBy?.kind ?? '-');
        return `      ${r.number === l.current ? '*' : ' '} ${String(r.number).padStart(4)}  ${r.releasedAt ?? r.createdAt}  ${String(r.files).padStart(6)} files ${mb(r.bytes).padStart(10)}  by ${by}`;
      }),
    ]),
  ];
}

function mb(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;
}

function limitOption(name: string, raw: string | undefined, parse: (s: string) => number | null): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'default') return null;
  const n = parse(raw);
  if (n === null) throw new UsageError(`${name}: expected a positive value (sizes like 500M, 5G) or "default", got "${raw}"`);
  return n;
}

function print(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

/** "1 node", "2 nodes". */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function crawlLines(crawls: LabelCrawl[]): string[] {
  if (crawls.length === 0) return ['  crawls:     none'];
  return crawls.flatMap((c) => [
    `  crawl of ${c.label}: ${c.status}${c.finishedAt ? ` ${c.finishedAt}` : ''}${c.stale ? ' (files changed since)' : ''}${c.summary?.fatal ? ' FATAL' : ''}`,
    ...(c.summary
      ? [
          `    ${[
            count(c.summary.units, 'unit'),
            count(c.summary.features, 'feature'),
            count(c.summary.bundles, 'bundle'),
            count(c.summary.categories, 'category', 'categories'),
            count(c.summary.nodes, 'node'),
            count(c.summary.nodeSets, 'node set'),
            count(c.summary.problems, 'problem'),
          ].join(', ')}`,
        ]
      : []),
    ...(c.platformRange ? [`    works with platform ${platformReleases(c.platformRange)} (${c.platformRange})`] : []),
    ...c.problems.map((p) => `    ${p.severity.padEnd(7)} ${p.code.padEnd(20)} ${p.where}${p.line ? `:${p.line}` : ''}  ${p.message}`),
    `    ${c.release.message}`,
  ]);
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
      const creds = await withProducts((p) => p.register(id, { name: opts.name, ...(icon !== undefined ? { icon } : {}) }), { create: true });
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
      const { product, history, files, crawls, bindings, trustedPublishes, releases } = await withProducts(async (p, f, c, t, r) => ({
        product: await p.show(id),
        history: await p.history(id, opts.history ? 1000 : 5),
        files: await f.summary(id),
        crawls: await c.report(id),
        bindings: await t.listBindings(id),
        trustedPublishes: await t.history(id, opts.history ? 1000 : 5),
        releases: await r.list(id),
      }));
      const hostKeys = await hostKeyFingerprints();
      const fieldsSet = FIELD_NAMES.filter((f) => product.fields[f] !== undefined);
      const revisions = history.map(({ changes: _c, ...r }) => r);
      const { custom, ...limits } = files.limits;
      const uploads = { files: files.files, bytes: files.bytes, heldByReleases: files.releases, lastUploadAt: files.lastUploadAt, labels: files.labels, limits, customLimits: custom };
      print(!!opts.json, { ...product, fieldsSet, revisions, uploads, releases, crawls, trustBindings: bindings, trustedPublishes, sftpHostKeys: hostKeys }, () =>
        [
          `${product.productId}: ${product.name}`,
          `  state:      ${product.state}`,
          `  page URL:   ${product.pageUrl}`,
          `  created:    ${product.createdAt}`,
          `  updated:    ${product.updatedAt}`,
          `  fields set: ${fieldsSet.join(', ')}`,
          `  ${opts.history ? 'history' : 'last edits'}:${revisions.length ? '' : ' none'}`,
          ...revisions.map((r) => `    ${r.at}  token ${r.tokenId}  from ${r.clientAddress}  ${r.changedFields.join(', ')}`),
          `  uploads:    ${files.files} files, ${mb(files.bytes)} of ${mb(limits.quotaBytes)}; ${limits.quotaFiles} files max, ${mb(limits.maxFileBytes)} per file${Object.keys(custom).length ? ' (set by staff)' : ''}`,
          ...(files.releases.files ? [`  releases:   ${files.releases.files} files, ${mb(files.releases.bytes)} only current releases still hold (counted in the quota)`] : []),
          `  last upload: ${files.lastUploadAt ?? 'never'}`,
          `  labels:${files.labels.length ? '' : ' none'}`,
          ...files.labels.map(
            (l) => `    ${l.label.padEnd(16)} ${String(l.files).padStart(6)} files  ${mb(l.bytes).padStart(10)}  ${l.hasArchive ? `archive ${mb(l.archiveBytes)}` : 'no archive'}  last upload ${l.lastUploadAt ?? '-'}${l.files === 0 ? '  (archive only: offered for download, not crawled)' : ''}`,
          ),
          ...releaseLines(releases),
          ...crawlLines(crawls),
          `  trusted publishing:${bindings.length ? '' : ' no bindings'}`,
          ...bindings.map((b) => `    ${bindingLine(b)}`),
          ...(trustedPublishes.length ? [`  ${opts.history ? 'trusted publishes' : 'latest trusted publishes'}:`] : []),
          ...trustedPublishes.map(
            (t) =>
              `    ${t.at}  ${t.action.padEnd(8)} ${t.repository}  ${t.workflow || '-'}  ${t.ref}  run ${t.runId}${t.detail ? `  ${JSON.stringify(t.detail)}` : ''}${t.runUrl ? `  ${t.runUrl}` : ''}`,
          ),
          ...hostKeys.map((k) => `  SFTP host key: ${k.type} ${k.fingerprint}`),
        ].join('\n'),
      );
    });

  registerLabelNoticeCommand(staff, (action) => withProducts((p) => action(p)));

  staff
    .command('rollback <product-id> <label>')
    .description("serve an earlier kept release of the label again (default: the one before the current) and crawl it")
    .option('--to <n>', 'the release number to serve (see `pier staff show`)')
    .option('--json', 'print JSON')
    .action(async (id: string, label: string, opts: { to?: string; json?: boolean }) => {
      if (opts.to !== undefined && !/^[1-9][0-9]{0,8}$/.test(opts.to)) throw new UsageError(`--to: expected a release number, got "${opts.to}"`);
      const moved = await withProducts((_p, _f, c) =>
        c.rollback(id, label, opts.to === undefined ? undefined : Number(opts.to), { kind: 'staff' }, () =>
          requireDownloadHost(loadConfig().publishing.downloadUrl, 'The label was not moved.'),
        ),
      );
      print(!!opts.json, moved, () => `Label ${label} of ${id} now serves release ${moved.current}${moved.previous === null ? '' : ` (was ${moved.previous})`}.`);
    });

  staff
    .command('crawl <product-id>')
    .description('crawl every uploaded update-site label (or one) from the download host, wait, and print the summary')
    .option('--label <label>', 'crawl only this label')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { label?: string; json?: boolean }) => {
      const { crawls, archiveOnly } = await withProducts(async (_p, _f, c) => ({
        crawls: await c.crawl(id, opts.label, { kind: 'staff' }, () => requireDownloadHost(loadConfig().publishing.downloadUrl, 'Nothing was crawled.')),
        archiveOnly: await c.archiveOnlyLabels(id),
      }));
      // An archive alone is offered for download but never crawled: say what would make it crawlable.
      const none = archiveOnly.length
        ? `Product "${id}" has only archives (${archiveOnly.map((l) => `update-site/${l}.zip`).join(', ')}), which are not crawled; upload the update site's contents to ${archiveOnly.map((l) => `update-site/${l}/`).join(', ')} to crawl it.`
        : `Product "${id}" has no uploaded update-site label to crawl.`;
      print(!!opts.json, { productId: id, labels: crawls }, () => (crawls.length === 0 ? none : crawlLines(crawls).map((l) => l.slice(2)).join('\n')));
      if (crawls.some((c) => c.summary?.fatal || c.release.outcome === 'refused')) process.exitCode = 1;
    });

  staff
    .command('enable <product-id>')
    .description('make the page live: only when the latest crawl of every label began after its last change and finished without fatal or error problems')
    .option('--force', 'go live even so, past unfinished crawls and fatal or error problems (says what was overridden)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { force?: boolean; json?: boolean }) => {
      const [r, warnings] = await withProducts(async (p, _f, c) => [await c.enable(id, !!opts.force), await p.placeholderWarnings(id)] as const);
      print(!!opts.json, warnings.length ? { ...r, warnings } : r, () =>
        [
          `Product "${id}" is live.`,
          ...(r.forced ? [`Forced past: ${r.blockers.join('; ')}`] : []),
          ...warnings.map((w) => `Warning: ${w.field} (line ${w.line}): ${w.message}`),
        ].join('\n'),
      );
    });

  staff
    .command('disable <product-id>')
    .description('hide the page again (still reachable at its URL, gone from catalog, sitemap, feeds and node search)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await withProducts((_p, _f, c) => c.disable(id));
      print(!!opts.json, r, () => `Product "${id}" is hidden.`);
    });

  staff
    .command('set-limits <product-id>')
    .description('set the upload limits of one product (sizes like 500M, 5G; "default" restores the configured default)')
    .option('--quota-bytes <size>', 'total bytes the product may store')
    .option('--quota-files <n>', 'total files the product may store')
    .option('--max-file-size <size>', 'largest single file')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { quotaBytes?: string; quotaFiles?: string; maxFileSize?: string; json?: boolean }) => {
      const change: { [K in keyof FileLimits]?: number | null } = {};
      const quotaBytes = limitOption('--quota-bytes', opts.quotaBytes, parseSize);
      const quotaFiles = limitOption('--quota-files', opts.quotaFiles, (s) => (/^\d{1,9}$/.test(s) && Number(s) > 0 ? Number(s) : null));
      const maxFileBytes = limitOption('--max-file-size', opts.maxFileSize, parseSize);
      if (quotaBytes !== undefined) change.quotaBytes = quotaBytes;
      if (quotaFiles !== undefined) change.quotaFiles = quotaFiles;
      if (maxFileBytes !== undefined) change.maxFileBytes = maxFileBytes;
      if (Object.keys(change).length === 0) throw new UsageError('give at least one of --quota-bytes, --quota-files, --max-file-size');
      const limits = await withProducts(async (p, f) => {
        await p.show(id);
        await f.setLimits(id, change);
        const { custom: _c, ...l } = await f.limitsFor(id);
        return l;
      });
      print(!!opts.json, limits, () =>
        `Limits of "${id}": ${mb(limits.quotaBytes)} in ${limits.quotaFiles} files at most, ${mb(limits.maxFileBytes)} per file`,
      );
    });

  staff
    .command('rescan <product-id>')
    .description('make the records of a product\'s files (usage, labels, crawls) match what storage holds, e.g. after a crash')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await withProducts(async (p, f) => {
        await p.show(id);
        return { productId: id, ...(await f.reconcile(id)) };
      });
      print(!!opts.json, r, () =>
        r.added + r.updated + r.removed === 0
          ? `The records of "${id}" already matched storage (${r.folders} folders).`
          : `Reconciled "${id}": ${r.added} file(s) recorded, ${r.updated} updated, ${r.removed} record(s) of missing files dropped (${r.folders} folders).`,
      );
    });

  staff
    .command('rotate-token <product-id>')
    .description('issue a new edit token; the old one and the product\'s trusted-publishing credentials stop working at once')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const r = await withProducts((p) => p.rotateEditToken(id));
      print(!!opts.json, r, () => `New edit token for "${id}": ${r.editToken}\n${ONCE.replace(' and SFTP password are', ' is')}`);
    });

  staff
    .command('rotate-sftp-password <product-id>')
    .description('issue a new SFTP password; the old one and the product\'s trusted-publishing credentials stop working at once, their SFTP sessions end')
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
      const v = await withProducts((p) => p.setPlatformRelease(version), { create: true });
      print(!!opts.json, { platformRelease: v }, () => `Current platform release: ${v}`);
    });

  registerTrustCommands(staff, (action) => withProducts((_p, _f, _c, t) => action(t)));
}
