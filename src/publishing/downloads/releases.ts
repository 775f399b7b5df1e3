/**
 * What a label's URL serves (releases/service.ts).
 *
 * `/<product>/<label>/…` is the label's current release, and nothing (404) before the label's
 * first release or once its folder was removed: what a vendor uploads to `update-site/<label>/`
 * is its working copy, never served as such (a plain SFTP upload arrives file by file, and an
 * upload whose crawl is refused must not reach users). It is read through the pointer
 * `<product>/releases/<label>/current` on every request (one readlink: a release made by any
 * process shows at once, and moves in one step). A file the current release lacks is looked up in
 * the earlier kept releases, so a client that read the previous metadata still finds its jars.
 *
 * At the label's root the download host answers `p2.index`, `compositeContent.xml` and
 * `compositeArtifacts.xml` itself: a P2 client reads the index first (it asks for it before any
 * other file) and is sent to the immutable `/<product>/<label>@<n>/` of the current release, where
 * every further file it reads belongs to that one release. The artifact composite lists the current
 * release and the two before it: a client that loaded the metadata of release n just before the
 * label moved to n+1 still finds n's artifacts.
 */
import { createHash } from 'node:crypto';
import type { Storage } from '../../infra/storage.js';
import { releaseKeys, releaseNumberOf } from '../releases/service.js';
import { FRESH_MS } from './file-cache.js';
import type { DownloadTarget } from './paths.js';

/** A file the download host makes rather than reads. */
export interface GeneratedFile {
  data: Buffer;
  /** When the label's pointer last moved: when the answer last changed. */
  modifiedMs: number;
  version: string;
}

/** `none`: the label serves nothing (no release): 404, whatever its folder holds. */
export type LabelAnswer = { key: string } | { generated: GeneratedFile } | { none: true };

const NONE: LabelAnswer = { none: true };

/** Earlier releases still answered through the label's address (an install spans seconds, not releases). */
const EARLIER_SERVED = 2;

/** Labels whose pointer reads are kept (each a few dozen bytes). */
const POINTERS_KEPT = 10_000;

const P2_INDEX = 'p2.index';
const CONTENT = 'compositeContent.xml';
const ARTIFACTS = 'compositeArtifacts.xml';
const GENERATED = new Set([P2_INDEX, CONTENT, ARTIFACTS]);

const xmlAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/'/g, '&apos;').replace(/"/g, '&quot;');

/** The composite repository document P2 reads (the format `p2.composite.repository` writes). */
function composite(kind: 'metadata' | 'artifact', name: string, children: string[], timestamp: number): string {
  const [pi, type] =
    kind === 'metadata'
      ? ['compositeMetadataRepository', 'org.eclipse.equinox.internal.p2.metadata.repository.CompositeMetadataRepository']
      : ['compositeArtifactRepository', 'org.eclipse.equinox.internal.p2.artifact.repository.CompositeArtifactRepository'];
  // Atomic loading off for artifacts: a kept release pruned meanwhile must not fail the others.
  const atomic = kind === 'metadata';
  return `<?xml version='1.0' encoding='UTF-8'?>
<?${pi} version='1.0.0'?>
<repository name='${xmlAttr(name)}' type='${type}' version='1.0.0'>
  <properties size='2'>
    <property name='p2.timestamp' value='${timestamp}'/>
    <property name='p2.atomic.composite.loading' value='${atomic}'/>
  </properties>
  <children size='${children.length}'>
${children.map((c) => `    <child location='${xmlAttr(c)}'/>`).join('\n')}
  </children>
</repository>
`;
}

/**
 * Resolves update-site URLs of released labels. `downloadUrl` is the public address the composite
 * documents name releases by (PIER_DOWNLOAD_URL); without it they are named relative to the label.
 */
export function labelReleases(storage: Storage, downloadUrl?: string, freshMs = FRESH_MS) {
  const base = downloadUrl?.replace(/\/+$/, '');
  /**
   * Pointers read lately, by label: a read serves the next `freshMs` (as the file cache's checks
   * do, file-cache.ts) unless this process changed the storage meanwhile. At tens of thousands of
   * requests a second one lstat per request cost a fifth of the throughput.
   */
  const pointers = new Map<string, { current: number | null; at: number; changes: number }>();
  function current(productId: string, label: string): number | null {
    const key = releaseKeys.pointer(productId, label);
    const now = performance.now();
    const changes = storage.changes();
    const known = pointers.get(key);
    if (known && known.changes === changes && now - known.at < freshMs) return known.current;
    const read = releaseNumberOf(storage.pointer(key));
    if (pointers.size >= POINTERS_KEPT) pointers.clear();
    pointers.set(key, { current: read, at: now, changes });
    return read;
  }
  const releaseUrl = (productId: string, label: string, n: number) =>
    base ? `${base}/${encodeURIComponent(productId)}/${encodeURIComponent(label)}@${n}/` : `../${encodeURIComponent(label)}@${n}/`;

  /**
   * The releases before `current` that clients may still be reading from, newest first: at most
   * EARLIER_SERVED of them (each costs a lookup on a miss and a child in the artifact composite).
   * Never a later one: a copy still being crawled, or a release rolled back from.
   */
  async function earlierReleases(productId: string, label: string, current: number): Promise<number[]> {
    const names = (await storage.listNames(releaseKeys.folder(productId, label))) ?? [];
    return names
      .map((n) => releaseNumberOf(n))
      .filter((n): n is number => n !== null && n < current)
      .sort((a, b) => b - a)
      .slice(0, EARLIER_SERVED);
  }

  async function generate(productId: string, label: string, name: string, current: number): Promise<GeneratedFile> {
    // The pointer's own time: it moves with every release and rollback (a rollback names an
    // older release, whose folder is older than what a client has cached).
    const modifiedMs = storage.pointerSetMs(releaseKeys.pointer(productId, label)) ?? 0;
    const title = `${productId} ${label}`;
    let text: string;
    if (name === P2_INDEX) {
      text = `version=1\nmetadata.repository.factory.order=${CONTENT},\\!\nartifact.repository.factory.order=${ARTIFACTS},\\!\n`;
    } else if (name === CONTENT) {
      text = composite('metadata', title, [releaseUrl(productId, label, current)], modifiedMs);
    } else {
      const others = await earlierReleases(productId, label, current);
      text = composite('artifact', title, [current, ...others].map((n) => releaseUrl(productId, label, n)), modifiedMs);
    }
    const data = Buffer.from(text);
    return { data, modifiedMs, version: createHash('sha256').update(data).digest('base64url').slice(0, 22) };
  }

  return {
    /** The label's current release number, or null (no release: the label's URL serves nothing). */
    current,

    /**
     * What a target below a label's folder is answered from. Synchronous unless the answer is a
     * generated file.
     */
    resolve(t: DownloadTarget): LabelAnswer | Promise<LabelAnswer> {
      const inLabel = t.inLabel;
      if (!inLabel || inLabel.release !== null) return { key: t.key };
      const served = current(t.productId, inLabel.label);
      if (served === null) return NONE;
      if (!t.slash && GENERATED.has(inLabel.rest)) {
        return generate(t.productId, inLabel.label, inLabel.rest, served).then((generated) => ({ generated }));
      }
      const tree = releaseKeys.tree(t.productId, inLabel.label, served);
      return { key: inLabel.rest === '' ? tree : `${tree}/${inLabel.rest}` };
    },

    /** The same path in the label's earlier kept releases, newest first (a file the current release lacks). */
    async earlier(t: DownloadTarget): Promise<string[]> {
      const inLabel = t.inLabel;
      if (!inLabel || inLabel.release !== null || inLabel.rest === '') return [];
      const served = current(t.productId, inLabel.label);
      if (served === null) return [];
      return (await earlierReleases(t.productId, inLabel.label, served)).map((n) => `${releaseKeys.tree(t.productId, inLabel.label, n)}/${inLabel.rest}`);
    },
  };
}

export type LabelReleases = ReturnType<typeof labelReleases>;
