import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ApiError, type Logger, type RunnerClient } from './client.js';

/** What the upload needs to know of the run: its id and lease, and whether to give up. */
export interface UploadingRun {
  id: string;
  lease: { leaseToken: string; attempt: number };
  /** A second SIGTERM: the run goes back to the queue, give up at once. */
  handBack(): boolean;
  /** The executor is stopping: a few tries, then give up. */
  stopping(): boolean;
}

/**
 * Uploads every regular file of `out/`, streamed from disk (outputs may be up to 1 GiB): a first
 * pass computes the sha256, the multipart body then reads the file again. Only regular files
 * really inside the output directory are read: the command may have replaced the directory by a
 * symbolic link (the run fails) or put links, directories or FIFOs in it (skipped, each with a
 * log line), and these must not make the executor upload what it can read elsewhere (its key).
 */
export async function uploadOutputs(
  client: RunnerClient,
  log: Logger,
  run: UploadingRun,
  outDir: string,
  realOutDir: string,
  runLog: (line: string) => void,
): Promise<void> {
  const dir = await fs.promises.lstat(outDir).catch(() => null);
  const real = dir?.isDirectory() ? await fs.promises.realpath(outDir).catch(() => null) : null;
  if (real !== realOutDir) {
    throw new Error('the output directory {out} was removed or replaced (by a symbolic link or another file): no outputs uploaded');
  }
  for (const entry of await fs.promises.readdir(outDir, { withFileTypes: true })) {
    const file = path.join(outDir, entry.name);
    const skip = (why: string) => {
      runLog(`executor: output "${entry.name}" skipped: ${why}\n`);
      log('output_skipped', { runId: run.id, name: entry.name, reason: why });
    };
    // O_NOFOLLOW: a link swapped in after readdir is refused; O_NONBLOCK: a FIFO does not hang.
    const handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK).catch((e: NodeJS.ErrnoException) => e);
    if (handle instanceof Error) {
      skip(handle.code === 'ELOOP' ? 'not a regular file (a symbolic link)' : `cannot be opened (${handle.code ?? handle.message})`);
      continue;
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) {
        skip(`not a regular file (${stat.isDirectory() ? 'a directory' : stat.isFIFO() ? 'a FIFO' : 'a special file'})`);
        continue;
      }
      // What was opened, by the kernel's account (Linux): a directory swapped in between the
      // check above and the open shows here.
      const opened = `/proc/self/fd/${handle.fd}`;
      const where = await fs.promises.readlink(opened).catch(() => null);
      if (where !== null && where !== path.join(realOutDir, entry.name)) {
        skip('not a regular file inside the output directory');
        continue;
      }
      await uploadOutput(client, log, run, entry.name, where !== null ? opened : file, stat.size);
    } finally {
      await handle.close();
    }
  }
}

/** One output, read through `source` (the open file where the system allows). */
async function uploadOutput(client: RunnerClient, log: Logger, run: UploadingRun, name: string, source: string, size: number): Promise<void> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(source), hash);
  const digest = hash.digest('hex');
  let delay = 250;
  for (let attempt = 1; ; attempt++) {
    // A fresh body per try: FormData bodies are consumed by a request.
    const form = new FormData();
    form.set('leaseToken', run.lease.leaseToken);
    form.set('attempt', String(run.lease.attempt));
    form.set('sha256', digest);
    form.set('file', await fs.openAsBlob(source), name);
    try {
      await client.request('PUT', `/api/runs/${run.id}/outputs/${encodeURIComponent(name)}`, undefined, { raw: form, retry: false });
      break;
    } catch (e) {
      if (e instanceof ApiError) throw e;
      // Stopping: a few tries, then give up; a second SIGTERM (hand back) gives up at once.
      if (run.handBack() || (run.stopping() && attempt > 3)) throw new Error(`giving up uploading ${name}: the executor is stopping`);
      log('api_retry', { method: 'PUT', path: `outputs/${name}`, error: (e as Error).message, attempt });
      await client.backoff(Math.random() * delay, true);
      delay = Math.min(delay * 2, 15_000);
    }
  }
  log('output_uploaded', { runId: run.id, name, size, sha256: digest });
}
