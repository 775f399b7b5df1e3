/**
 * `pier publish`, step by step (docs/vendors.md#publishing-with-pier-publish). Nothing is uploaded
 * before everything that can be checked first was: the settings, the site (crawler's P2 reading,
 * locally), the credentials, the page fields (dry run), the SFTP host key and login. Then the
 * upload of what differs, the release (the label switches atomically once the crawl passes), the
 * page fields.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isLabel } from '../../publishing/files/tree.js';
import { failureOf, fieldLines, HttpProblem, HttpTimeout, type LabelCrawl, type PublishingApi, type PublishingInfo, publishingApi } from './api.js';
import { EXIT, PublishFailure } from './failure.js';
import { knownHostsFile, rememberedKey, rememberKey } from './known-hosts.js';
import { hashAll, type LocalFile, readLocalTree } from './local-site.js';
import { readPage } from './page.js';
import { isMetadata, planUpload } from './plan.js';
import { uploadProgress } from './progress.js';
import { blocking, checkSite } from './site-check.js';
import { connectSftp, type HostKeyRule, remoteOps } from './sftp.js';
import { type TrustedCredential, trustedCredential, trustedProvider } from './trusted.js';
import pkg from '../../../package.json' with { type: 'json' };

export interface PublishOptions {
  server: string;
  product: string;
  label: string;
  site: string;
  archive?: string;
  assets?: string;
  workflows?: string;
  page?: string;
  hostKey?: string[];
  dryRun?: boolean;
  /** Seconds to wait for the release (its crawl). */
  timeout: number;
}

export interface Output {
  line(text: string): void;
  /** Whether progress may redraw a bar (stderr is a terminal). */
  isTTY: boolean;
}

type Env = Record<string, string | undefined>;

/** Deadline of the calls that are not the release. */
const CALL_SECONDS = 60;
/** A trusted credential this close to its expiry is exchanged again before the release. */
const RENEW_BEFORE_MS = 2 * 60_000;
const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}$/;

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** The base URL: https, or http to a loopback address only (a token sent in clear is a token leaked). */
function serverUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new PublishFailure(EXIT.usage, `--server ${raw}: not a URL`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) || u.hostname.endsWith('.localhost') || /^127\./.test(u.hostname);
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) {
    throw new PublishFailure(EXIT.usage, `--server ${raw}: must be https:// (http:// only to this machine): the edit token travels with every request`);
  }
  return u.href.replace(/\/+$/, '');
}

function checkSettings(o: PublishOptions, env: Env): void {
  if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(o.product)) throw new PublishFailure(EXIT.usage, `--product ${o.product}: not a product ID`);
  if (!isLabel(o.label)) throw new PublishFailure(EXIT.usage, `--label ${o.label}: a label is letters, digits, ".", "_" and "-"`);
  if (!fs.statSync(o.site, { throwIfNoEntry: false })?.isDirectory()) throw new PublishFailure(EXIT.usage, `--site ${o.site}: not a folder`);
  if (o.archive !== undefined && !fs.statSync(o.archive, { throwIfNoEntry: false })?.isFile()) throw new PublishFailure(EXIT.usage, `--archive ${o.archive}: not a file`);
  for (const [flag, dir] of [['--assets', o.assets], ['--workflows', o.workflows]] as const) {
    if (dir !== undefined && !fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new PublishFailure(EXIT.usage, `${flag} ${dir}: not a folder`);
  }
  for (const fp of o.hostKey ?? []) {
    if (!FINGERPRINT.test(fp)) throw new PublishFailure(EXIT.usage, `--host-key ${fp}: expected a fingerprint like SHA256:… (43 base64 characters, as ssh-keygen -lf prints it)`);
  }
  if (!Number.isFinite(o.timeout) || o.timeout <= 0) throw new PublishFailure(EXIT.usage, '--timeout: seconds, more than 0');
  if (!trustedProvider(env) && (!env.PIER_EDIT_TOKEN || !env.PIER_SFTP_PASSWORD)) {
    throw new PublishFailure(
      EXIT.usage,
      'no credentials: set PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD, or run in GitHub Actions with "permissions: id-token: write" or GitLab CI with an ID token in PIER_ID_TOKEN (trusted publishing)',
    );
  }
}

function printCrawl(out: Output, crawl: LabelCrawl | null): void {
  if (!crawl) return;
  const s = crawl.summary;
  if (s) out.line(`crawl: ${plural(s.units, 'unit')}, ${plural(s.features, 'feature')}, ${plural(s.bundles, 'bundle')}, ${plural(s.nodes, 'node')}, ${plural(crawl.problems.length, 'problem')}`);
  if (crawl.platformRange) out.line(`platform range: ${crawl.platformRange}`);
  for (const p of crawl.problems) out.line(`  ${p.severity} ${p.code}: ${p.message}${p.where ? ` (${p.where}${p.line ? `:${p.line}` : ''})` : ''}`);
}

interface Credentials {
  editToken: string;
  sftpPassword: string;
  trusted: TrustedCredential | null;
  /** Which credentials, for the log (never a secret). */
  description: string;
}

async function credentials(env: Env, api: PublishingApi, info: PublishingInfo, o: PublishOptions): Promise<Credentials> {
  const tp = info.trustedPublishing;
  if (trustedProvider(env)) {
    if (!tp) throw new PublishFailure(EXIT.authentication, `${o.server} does not offer trusted publishing`);
    const trusted = await trustedCredential(env, api, { audience: tp.audience, productId: o.product, timeoutSeconds: CALL_SECONDS });
    if (trusted) {
      const description = `trusted publishing: ${trusted.identity}; credential valid until ${trusted.expiresAt.toISOString()}`;
      return { editToken: trusted.token, sftpPassword: trusted.token, trusted, description };
    }
  }
  return {
    editToken: env.PIER_EDIT_TOKEN as string,
    sftpPassword: env.PIER_SFTP_PASSWORD as string,
    trusted: null,
    description: 'credentials: PIER_EDIT_TOKEN and PIER_SFTP_PASSWORD',
  };
}

/** How the SFTP host key is checked: --host-key, else the keys the server lists, else trust on first use. */
function hostKeyRule(o: PublishOptions, info: PublishingInfo, env: Env): { rule: HostKeyRule; remembered: string | null; file: string } {
  const file = knownHostsFile(env);
  const hostPort = `${info.sftp.host}:${info.sftp.port}`;
  if (o.hostKey?.length) return { rule: { kind: 'pinned', fingerprints: o.hostKey }, remembered: null, file };
  const listed = info.sftp.hostKeys.map((k) => k.fingerprint).filter((f) => typeof f === 'string');
  if (listed.length) return { rule: { kind: 'listed', fingerprints: listed }, remembered: null, file };
  const remembered = rememberedKey(file, hostPort);
  return { rule: remembered ? { kind: 'remembered', fingerprints: [remembered], file } : { kind: 'first-use' }, remembered, file };
}

export async function publish(o: PublishOptions, env: Env, out: Output): Promise<number> {
  checkSettings(o, env);
  const server = serverUrl(o.server);
  const api = publishingApi({ server, timeoutSeconds: CALL_SECONDS, userAgent: `pier-publish/${pkg.version}` });
  const page = o.page === undefined ? null : readPage(o.page);

  let info: PublishingInfo;
  try {
    info = await api.info();
  } catch (e) {
    throw failureOf(e, `${server}/api/publishing (is --server right?)`, EXIT.usage);
  }

  // The site check, the credentials, the page dry run, the server's file list and the SFTP login
  // change nothing, so they run at once; their outcomes are taken in this order, the site
  // first: a broken site is refused (exit 3) whatever else would have failed.
  const site = path.resolve(o.site);
  const tree = await readLocalTree(site, Buffer.byteLength(`update-site/${o.label}/`));
  if (tree.files.length === 0) throw new PublishFailure(EXIT.siteCheck, `--site ${o.site}: the folder is empty`);
  // Every file hashed once: the plan and the site check's checksum pass both use it.
  const checkP = hashAll(tree.files).then(() => checkSite(tree));
  const credsP = credentials(env, api, info, o);
  const pageP = page ? credsP.then((c) => api.patch(o.product, c.editToken, page, true)) : null;
  const remoteP = credsP.then((c) => api.labelFiles(o.product, o.label, c.editToken));
  const hostKey = hostKeyRule(o, info, env);
  const connP = credsP.then((c) =>
    connectSftp({ host: info.sftp.host, port: info.sftp.port, username: o.product, password: c.sftpPassword, hostKey: hostKey.rule, timeoutSeconds: CALL_SECONDS }),
  );
  for (const p of [checkP, credsP, pageP, remoteP, connP]) p?.catch(() => {});

  let creds: Credentials;
  let remote: Awaited<ReturnType<PublishingApi['labelFiles']>>;
  let conn: Awaited<typeof connP>;
  let archive: LocalFile | null;
  let extras: { remote: string; file: LocalFile }[];
  try {
    // 1. The site, before anything is uploaded.
    const check = await checkP;
    const refusing = [...tree.problems.map((p) => `error name_refused: ${p}`), ...check.problems.filter(blocking).map((p) => `${p.severity} ${p.code}: ${p.message} (${p.where})`)];
    for (const p of check.problems.filter((x) => !blocking(x))) out.line(`site check: warning ${p.code}: ${p.message} (${p.where})`);
    if (refusing.length) throw new PublishFailure(EXIT.siteCheck, `the site in ${o.site} is broken; nothing was uploaded`, refusing);
    const s = check.summary;
    out.line(`site check: ${plural(tree.files.length, 'file')}, ${plural(s.units, 'unit')}, ${plural(s.bundles, 'bundle')}, ${plural(s.nodes, 'node')}: OK`);

    // 2. Credentials, then everything that can refuse without changing anything.
    creds = await credsP;
    out.line(creds.description);
    if (pageP) {
      try {
        const dry = await pageP;
        for (const w of dry.warnings ?? []) out.line(`page fields: warning ${w.field}: ${w.message}`);
        out.line(`page fields: ${Object.keys(page ?? {}).join(', ')}: accepted (dry run)`);
      } catch (e) {
        throw failureOf(e, 'page fields (dry run); nothing was uploaded', EXIT.pageFields);
      }
    }
    try {
      remote = await remoteP;
    } catch (e) {
      throw failureOf(e, "reading the label's files", EXIT.upload);
    }
    archive = o.archive === undefined ? null : await archiveToSend(o.archive, remote.archive ?? null);
    extras = [...(await areaFiles('assets', o.assets)), ...(await areaFiles('workflows', o.workflows))];
    conn = await connP;
  } catch (e) {
    // A login in progress or done is ended: an open session would keep this process running.
    connP.then((c) => c.end(), () => {});
    throw e;
  }
  const plan = planUpload(tree, remote);

  const hostPort = `${info.sftp.host}:${info.sftp.port}`;
  if (hostKey.rule.kind === 'first-use') {
    out.line(`SFTP host key of ${hostPort}: ${conn.fingerprint} (first use: not checked; pin it with --host-key ${conn.fingerprint})`);
    if (!o.dryRun) rememberKey(hostKey.file, hostPort, conn.fingerprint);
  } else out.line(`SFTP ${hostPort}: host key ${conn.fingerprint} (${hostKey.rule.kind === 'pinned' ? 'pinned' : hostKey.rule.kind === 'remembered' ? 'as first seen' : 'as GET /api/publishing lists'})`);

  const upBytes = plan.uploads.reduce((n, f) => n + f.size, 0);
  const summary = `${plural(plan.uploads.length, 'file')} to upload (${mb(upBytes)}), ${plural(plan.deletes.length + plan.clearFirst.files.length, 'file')} and ${plural(plan.rmdirs.length + plan.clearFirst.folders.length, 'folder')} to remove, ${plan.unchanged} unchanged`;
  if (o.dryRun) {
    conn.end();
    out.line(`dry run: ${summary}${archive ? ', the archive' : ''}${extras.length ? `, ${plural(extras.length, 'asset/workflow file')}` : ''}; nothing changed`);
    return EXIT.published;
  }

  // 3. The upload.
  const label = `/update-site/${o.label}`;
  const at = (p: string) => `${label}/${p}`;
  try {
    const ops = remoteOps(conn.sftp);
    const started = Date.now();
    await ops.mkdirs([label]);
    await ops.removeFiles(plan.clearFirst.files.map(at));
    await ops.removeFolders(plan.clearFirst.folders.map(at));
    await ops.mkdirs(plan.mkdirs.map(at));
    const progress = plan.uploads.length ? uploadProgress({ files: plan.uploads.length, bytes: upBytes }, { isTTY: out.isTTY, write: out.line }) : null;
    // Artifacts first, then the metadata that names them (plan order), each group in parallel.
    const firstGroup = plan.uploads.filter((f) => !isMetadata(f.path));
    const lastGroup = plan.uploads.filter((f) => isMetadata(f.path));
    await ops.putAll(firstGroup.map((f) => ({ remote: at(f.path), file: f })), progress);
    await ops.putAll(lastGroup.map((f) => ({ remote: at(f.path), file: f })), progress);
    progress?.done();
    await ops.removeFiles(plan.deletes.map(at));
    await ops.removeFolders(plan.rmdirs.map(at));
    if (archive) await ops.putAll([{ remote: `/update-site/${o.label}.zip`, file: archive }], null);
    if (extras.length) {
      const folders = [...new Set(extras.flatMap((e) => parents(e.remote)))];
      await ops.mkdirs(folders);
      await ops.putAll(extras, null);
    }
    out.line(`uploaded: ${summary.replace(' to upload', '').replace(' to remove', ' removed')}${archive ? ', the archive' : ''}${extras.length ? `, ${plural(extras.length, 'asset/workflow file')}` : ''} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (e) {
    throw e instanceof PublishFailure ? e : new PublishFailure(EXIT.upload, `upload failed: ${(e as Error).message}`);
  } finally {
    conn.end();
  }

  // 4. The release: the crawl of the uploaded folder, and the atomic switch when it passes.
  let token = creds.editToken;
  if (creds.trusted && creds.trusted.expiresAt.getTime() - Date.now() < RENEW_BEFORE_MS) {
    const renewed = await credentials(env, api, info, o);
    out.line(renewed.description);
    token = renewed.editToken;
  }
  try {
    const r = await api.release(o.product, o.label, token, o.timeout);
    const rel = r.release;
    out.line(
      !rel
        ? `release: label ${r.label} has no release`
        : r.unchanged
          ? `release: the folder did not change since release ${rel.number}; label ${r.label} stays on it`
          : `release: label ${r.label} is now release ${rel.number} (${plural(rel.files, 'file')}, ${mb(rel.bytes)})`,
    );
    printCrawl(out, r.crawl);
  } catch (e) {
    if (e instanceof HttpTimeout) throw new PublishFailure(EXIT.timedOut, `${e.message} (--timeout ${o.timeout}); the upload is complete, the label switches when its crawl passes`);
    if (e instanceof HttpProblem && e.problem.status === 422) {
      const problems = (e.problem.problems ?? []).map((p) => `${p.severity} ${p.code}: ${p.message} (${p.where})`);
      // The server's detail says what users get now: the previous release, or nothing before the first.
      throw new PublishFailure(EXIT.releaseRefused, `release refused: ${e.problem.detail}`, [...problems, ...fieldLines(e.problem)]);
    }
    throw failureOf(e, 'release', EXIT.releaseRefused);
  }

  // 5. The page fields, now that the release they describe is out.
  if (page) {
    try {
      const done = await api.patch(o.product, token, page, false);
      out.line(`page fields: ${Object.keys(page).join(', ')}: saved${done.warnings?.length ? ` with ${plural(done.warnings.length, 'warning')}` : ''}`);
    } catch (e) {
      throw failureOf(e, 'page fields', EXIT.pageFields);
    }
  }
  out.line(`published ${o.product} ${o.label}: ${server}/product/${o.product}`);
  return EXIT.published;
}

function parents(remote: string): string[] {
  const parts = remote.split('/').filter(Boolean);
  return parts.slice(1, -1).map((_, i) => `/${parts.slice(0, i + 2).join('/')}`);
}

/** The archive, unless the server has the same bytes already. */
async function archiveToSend(file: string, remote: { size: number; sha256: string } | null): Promise<LocalFile | null> {
  const f: LocalFile = { path: path.basename(file), abs: path.resolve(file), size: fs.statSync(file).size };
  await hashAll([f]);
  return remote && remote.size === f.size && remote.sha256 === f.sha256 ? null : f;
}

/**
 * Files of --assets or --workflows, uploaded whole every time (no manifest: they are few and
 * small); nothing there is removed, as pages and other labels may still link to older files.
 */
async function areaFiles(area: 'assets' | 'workflows', dir: string | undefined): Promise<{ remote: string; file: LocalFile }[]> {
  if (dir === undefined) return [];
  const tree = await readLocalTree(path.resolve(dir), Buffer.byteLength(`${area}/`));
  if (tree.problems.length) throw new PublishFailure(EXIT.usage, `--${area} ${dir}: names the server refuses`, tree.problems);
  return tree.files.map((f) => ({ remote: `/${area}/${f.path}`, file: f }));
}
