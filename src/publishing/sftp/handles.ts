/** What an open SFTP handle holds: a file being read, an upload being written, a folder being listed. */
import type { FileEntry } from 'ssh2';
import type { StoredList, StoredReader } from '../../infra/storage.js';
import type { Upload } from '../files/service.js';
import type { TreePath } from '../files/tree.js';

export type Handle =
  | { kind: 'read'; path: string; reader: StoredReader }
  | {
      kind: 'write';
      path: string;
      upload: Upload;
      /** With APPEND, where the next write lands (requests are placed in arrival order, like O_APPEND). */
      appendAt: number | null;
      /**
       * Size of the kept previous contents until the first write (opened without TRUNC): a
       * first write at or past it would continue the stored file, see `RESUME_REFUSED`.
       */
      keptUntilFirstWrite: number | null;
      /** The limit message once a write was refused; the upload is then aborted. */
      failed: string | null;
      times: { atimeMs: number; mtimeMs: number } | null;
      inFlight: Set<Promise<unknown>>;
    }
  | {
      kind: 'dir';
      path: TreePath;
      /** `.`, `..` (and the root's three folders) not yet sent. */
      first: FileEntry[];
      /** The folder read a batch per READDIR; null for the root and a folder not created yet. */
      list: StoredList | null;
    };
