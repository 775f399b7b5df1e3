/**
 * The download host's folder index pages (index-page.ts renders one), cached by what they are
 * built from: the folder's storage version, which moves with every entry added, removed or
 * renamed and with times set on an entry through the storage (storage-local-links.ts `setTimes`), and
 * is read by every request anyway. So a page is listed, stat-ed and rendered once per version of
 * its folder, however many anonymous clients page through it; a change shows on the next
 * request, also one made by another process or instance sharing the storage.
 *
 * A miss is bounded: the folder's names are read once per version (shared by requests arriving
 * together) and kept sorted, the page's FOLDER_PAGE_ENTRIES entries are stat-ed asynchronously a
 * batch at a time (storage.statNames: the thread pool, not the event loop), and one page is
 * rendered. Both caches are bounded in bytes; the oldest entries go first.
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Storage } from '../../infra/storage.js';
import { FOLDER_PAGE_ENTRIES, folderIndex } from './index-page.js';

/** Memory for sorted entry names of folders lately listed (a name costs its UTF-16 bytes plus a slot). */
const NAMES_BYTES = 16 * 1024 * 1024;
/** Memory for rendered index pages (a full page of long names is about 100 KiB of UTF-8). */
const PAGES_BYTES = 8 * 1024 * 1024;
/** What a name or a page costs beside its characters (the string, its slot in an array or map). */
const SLOT_BYTES = 40;

const gzip = promisify(zlib.gzip);

/** One built page: its HTML, the same gzipped (most clients take it: a tenth of the bytes), and its strong ETag. */
export interface BuiltPage {
  body: Buffer;
  gzipped: Buffer;
  etag: string;
  pages: number;
}

export type FolderPage = ({ kind: 'page' } & BuiltPage) | { kind: 'missing' } | { kind: 'beyond'; pages: number };

/** A map bounded by the bytes its values are charged; the oldest entry goes first. */
class BytesBounded<V> {
  readonly #entries = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;
  constructor(readonly maxBytes: number) {}

  get(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  set(key: string, value: V, bytes: number): void {
    this.delete(key);
    if (bytes > this.maxBytes) return;
    while (this.#bytes + bytes > this.maxBytes) this.delete(this.#entries.keys().next().value as string);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const old = this.#entries.get(key);
    if (!old) return;
    this.#entries.delete(key);
    this.#bytes -= old.bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }
}

export class FolderPages {
  readonly #names: BytesBounded<{ version: string; names: string[] }>;
  readonly #pages: BytesBounded<BuiltPage>;
  /** Reads and renders in progress, by what they are for: requests arriving together share one. */
  readonly #pending = new Map<string, Promise<unknown>>();

  constructor(
    private readonly storage: Pick<Storage, 'listNames' | 'statNames'>,
    limits: { namesBytes?: number; pagesBytes?: number } = {},
  ) {
    this.#names = new BytesBounded(limits.namesBytes ?? NAMES_BYTES);
    this.#pages = new BytesBounded(limits.pagesBytes ?? PAGES_BYTES);
  }

  /** Bytes held by both caches (tests check the bound). */
  get bytes(): { names: number; pages: number } {
    return { names: this.#names.bytes, pages: this.#pages.bytes };
  }

  /**
   * Page `page` of the index of folder `key` at storage version `version` (undefined: a backend
   * without versions; then nothing is cached), titled `title` (the path the client asked for).
   */
  async page(key: string, version: string | undefined, title: string, page: number): Promise<FolderPage> {
    const pageKey = version === undefined ? null : `${key}\u0000${version}\u0000${page}\u0000${title}`;
    const cached = pageKey === null ? undefined : this.#pages.get(pageKey);
    if (cached) return { kind: 'page', ...cached };
    return this.#shared(pageKey === null ? null : `page\u0000${pageKey}`, async () => {
      const names = await this.#namesOf(key, version);
      if (!names) return { kind: 'missing' } as const;
      const pages = Math.max(1, Math.ceil(names.length / FOLDER_PAGE_ENTRIES));
      if (page > pages) return { kind: 'beyond', pages } as const;
      const shown = names.slice((page - 1) * FOLDER_PAGE_ENTRIES, page * FOLDER_PAGE_ENTRIES);
      const entries = (await this.storage.statNames(key, shown)).filter((e) => e !== null);
      const body = Buffer.from(folderIndex(title, entries, { page, pages }));
      // Compressed once per page on the thread pool, then served as is.
      const gzipped = await gzip(body);
      const built: BuiltPage = { body, gzipped, etag: `"i${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, pages };
      if (pageKey !== null) this.#pages.set(pageKey, built, body.length + gzipped.length + pageKey.length * 2 + SLOT_BYTES);
      return { kind: 'page', ...built } as const;
    });
  }

  /** The folder's entry names, sorted; read again only when the folder's version moved. */
  async #namesOf(key: string, version: string | undefined): Promise<string[] | null> {
    const known = this.#names.get(key);
    if (known && version !== undefined && known.version === version) return known.names;
    return this.#shared(version === undefined ? null : `names\u0000${key}\u0000${version}`, async () => {
      const names = await this.storage.listNames(key);
      if (!names || version === undefined) return names;
      let bytes = key.length * 2 + SLOT_BYTES;
      for (const n of names) bytes += n.length * 2 + SLOT_BYTES;
      this.#names.set(key, { version, names }, bytes);
      return names;
    });
  }

  /** Runs `work` once for all callers asking for the same `id` at once (null: never shared). */
  #shared<T>(id: string | null, work: () => Promise<T>): Promise<T> {
    if (id === null) return work();
    const running = this.#pending.get(id) as Promise<T> | undefined;
    if (running) return running;
    const started = work().finally(() => this.#pending.delete(id));
    this.#pending.set(id, started);
    return started;
  }
}
