/**
 * What a publish changes in the label's folder so that it equals the built site: files that are
 * new or differ (size, then SHA-256, against what the server reports) are uploaded, files and
 * folders the site no longer has are removed. Everything else stays as it is, so a re-run after
 * an interruption moves only what is still missing or different.
 */
import type { LabelFiles } from './api.js';
import type { LocalFile, LocalTree } from './local-site.js';

export interface UploadPlan {
  /** Remote files and folders in the way of a local folder or file of the same path (removed first). */
  clearFirst: { files: string[]; folders: string[] };
  /** Folders to create, parents first. */
  mkdirs: string[];
  /** Files to upload: artifacts first, repository metadata last. */
  uploads: LocalFile[];
  /** Files the site no longer has, removed after the uploads (the old metadata names them until then). */
  deletes: string[];
  /** Folders the site no longer has, deepest first. */
  rmdirs: string[];
  /** Files already on the server as they are here. */
  unchanged: number;
}

/**
 * P2 repository metadata: written last, so that a client reading the folder during the upload
 * (a plain download before the release switch) finds new metadata only with its artifacts there.
 */
const METADATA = /^(?:(?:content|artifacts|compositeContent|compositeArtifacts)\.(?:jar|xml|xml\.xz)|p2\.index)$/;
export const isMetadata = (p: string) => METADATA.test(p.slice(p.lastIndexOf('/') + 1));

const depth = (p: string) => p.split('/').length;
const under = (p: string, folder: string) => p.startsWith(`${folder}/`);

export function planUpload(local: LocalTree, remote: LabelFiles): UploadPlan {
  const localFiles = new Map(local.files.map((f) => [f.path, f] as const));
  const localFolders = new Set(local.folders);
  const remoteFiles = new Map(remote.files.map((f) => [f.path, f] as const));
  const remoteFolders = new Set(remote.folders ?? []);
  // Folders implied by files (a server that does not list folders).
  for (const f of remote.files) {
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) remoteFolders.add(parts.slice(0, i).join('/'));
  }

  const clearFolders = [...remoteFolders].filter((d) => localFiles.has(d));
  const clearFiles = [...remoteFiles.keys()].filter((p) => localFolders.has(p) || clearFolders.some((d) => under(p, d)));
  const cleared = new Set(clearFiles);
  const clearedFolders = [...remoteFolders].filter((d) => clearFolders.some((c) => d === c || under(d, c)));
  const goneFolders = new Set(clearedFolders);

  const uploads: LocalFile[] = [];
  let unchanged = 0;
  for (const f of local.files) {
    const r = remoteFiles.get(f.path);
    if (r && !cleared.has(f.path) && r.size === f.size && r.sha256 === f.sha256) unchanged++;
    else uploads.push(f);
  }
  uploads.sort((a, b) => Number(isMetadata(a.path)) - Number(isMetadata(b.path)) || depth(b.path) - depth(a.path) || (a.path < b.path ? -1 : 1));

  return {
    clearFirst: { files: clearFiles, folders: clearedFolders.sort((a, b) => depth(b) - depth(a)) },
    mkdirs: local.folders.filter((d) => !remoteFolders.has(d) || goneFolders.has(d)).sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : 1)),
    uploads,
    deletes: [...remoteFiles.keys()].filter((p) => !localFiles.has(p) && !cleared.has(p)).sort(),
    rmdirs: [...remoteFolders].filter((d) => !localFolders.has(d) && !goneFolders.has(d)).sort((a, b) => depth(b) - depth(a) || (a < b ? -1 : 1)),
    unchanged,
  };
}
