/**
 * The thread that reads an uploaded archive's declared parameters (isolated-declared.ts): the
 * archive is the uploader's, so inflating its settings files, scanning them and parsing the XML
 * of configuration nodes stalls only this thread, never the serving event loop. It posts back
 * plain data, which the serving side checks before it stores any of it.
 */
import { parentPort } from 'node:worker_threads';
import { type DeclaredParameter, parameterOfSettings } from './declared-parameters.js';
import { readConfigurationSettings } from './settings-entries.js';

export interface DeclaredJob {
  /** The stored archive. */
  file: string;
  /** Tests only: the worker counts the job in cell 1, then waits while cell 0 is 0. */
  hold?: Int32Array;
}

export type DeclaredReply = { ok: true; parameters: (DeclaredParameter | null)[] } | { ok: false; message: string };

const HOLD_MAX_MS = 60_000;

const port = parentPort;
if (port) {
  port.on('message', async (job: DeclaredJob) => {
    try {
      const settings = await readConfigurationSettings(job.file);
      if (job.hold) {
        Atomics.add(job.hold, 1, 1);
        Atomics.wait(job.hold, 0, 0, HOLD_MAX_MS);
      }
      port.postMessage({ ok: true, parameters: settings.map((xml) => parameterOfSettings(xml)) } satisfies DeclaredReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies DeclaredReply);
    }
  });
  port.postMessage('ready');
}
