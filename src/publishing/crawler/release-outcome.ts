/**
 * What a crawl did about a label's releases, said to the vendor (crawl report, the release call's
 * 422, `pier staff crawl`): whether its copy of the upload was released or refused, and what
 * users get from the label's URL now. Derived from the label's copies (label_releases) and its
 * pointer, so every report says it, also of crawls made by another process.
 */
import { ConflictError } from '../../infra/errors.js';
import type { ReleaseRow } from '../releases/repository.js';
import type { CrawlResult } from './crawl.js';

export interface ReleaseOutcome {
  /**
   * What the crawl did with a copy of the upload: `released` (it passed and became a release),
   * `refused` (its crawl found problems that make installs fail), `checking` (being crawled),
   * `none` (no new copy: the folder had not changed since its release, a rollback, a removal).
   */
  outcome: 'released' | 'refused' | 'checking' | 'none';
  /** The copy's number (`<label>@<n>/` once released), null without one. */
  number: number | null;
  /** The release users get from the label's URL now; null: it answers 404. */
  serving: number | null;
  /** What users get from the label's URL now, for people. */
  users: string;
  /** One sentence for people: what happened, and what users get. */
  message: string;
}

function servedNow(url: string, serving: number | null, everReleased: boolean): string {
  if (serving !== null) return `users get release ${serving} from ${url}`;
  return everReleased
    ? `the label serves nothing (its folder was removed): users get 404 Not Found from ${url}`
    : `the label has no release yet: users get 404 Not Found from ${url}`;
}

/**
 * The outcome of the crawl of a label that started at `startedAt` with the files' change stamp
 * `filesSeq`: its copy is the one taken with that stamp after it started (a crawl takes at most
 * one, at its start).
 */
export function releaseOutcome(
  crawl: { status: 'running' | 'finished'; startedAt: string; filesSeq: number; url: string },
  copies: ReleaseRow[],
  serving: number | null,
): ReleaseOutcome {
  const copy = copies.find((r) => r.files_seq === crawl.filesSeq && r.created_at >= crawl.startedAt);
  const users = servedNow(crawl.url, serving, copies.some((r) => r.status === 'released'));
  if (crawl.status === 'running') {
    return { outcome: 'checking', number: copy?.status === 'candidate' ? copy.number : null, serving, users, message: `this upload is being crawled; ${users} meanwhile` };
  }
  if (copy?.status === 'released') return { outcome: 'released', number: copy.number, serving, users, message: `released as release ${copy.number}; ${users}` };
  if (copy) {
    return {
      outcome: 'refused',
      number: copy.number,
      serving,
      users,
      message: `release refused: the crawl of this upload (copy ${copy.number}) found problems that make installs fail, so it was not released; ${users}`,
    };
  }
  return { outcome: 'none', number: null, serving, users, message: `no new release (the label's folder had not changed since its release, or the label was rolled back or removed); ${users}` };
}

/**
 * The crawl's problems addressed where the vendor can open them: a copy's crawl read it at its
 * candidate address, which stops answering once the copy is released (then it is `<label>@<n>/`)
 * or refused (then the copy is gone: the vendor's upload folder over SFTP is named instead).
 */
export function readdressed<R extends Pick<CrawlResult, 'url' | 'problems'>>(r: R, from: string, to: string): R {
  const move = (s: string) => s.split(from).join(to);
  return { ...r, url: move(r.url), problems: r.problems.map((p) => ({ ...p, where: move(p.where), message: move(p.message) })) };
}

/**
 * The label's upload folder as the vendor opens it over SFTP (`sftp://<product>@<host>:<port>/update-site/<label>/`:
 * the SFTP user name is the product ID), or the folder's path in the vendor's tree where the SFTP address is not known.
 */
export function uploadFolderAddress(sftp: { host: string; port: number } | undefined, productId: string, label: string): string {
  const folder = `/update-site/${encodeURIComponent(label)}/`;
  if (!sftp) return folder.slice(1);
  const host = sftp.host.includes(':') ? `[${sftp.host}]` : sftp.host;
  return `sftp://${encodeURIComponent(productId)}@${host}:${sftp.port}${folder}`;
}

/** A rollback of a label whose upload folder is gone (docs/vendors.md "Rollback"). */
export class LabelRemovedError extends ConflictError {
  constructor(productId: string, label: string, kept: number[]) {
    super(
      `label "${label}" of product "${productId}" has no update-site/${label}/ folder: a removed folder withdraws the label, so it is not rolled back. ` +
        `Upload the label's folder again to release it${kept.length ? `; its kept releases (${kept.join(', ')}) can be rolled back to once it is there` : ''}`,
      'label_removed',
    );
    this.name = 'LabelRemovedError';
  }
}
