/**
 * The comparison thread (changes/isolated-compare.ts): reads both sides of a comparison through
 * a database connection of its own, signs and compares them (changes/compare.ts) and posts back
 * one page. Thousands of nodes are parsed and hashed here, never on the serving event loop; it
 * only reads, so its connection never holds a write lock the serving one could wait for.
 */
import { parentPort } from 'node:worker_threads';
import { type Database, openDatabase } from '../../infra/database/index.js';
import type { PublishingDB } from '../db.js';
import { comparePage, type CompareOutcome, type DiffsKept, type SideRef } from './compare.js';
import { releaseNodesRepository } from './repository.js';

export interface CompareJob {
  databaseUrl: string;
  productId: string;
  from: SideRef;
  to: SideRef;
  page: number;
  /** See NodesDiffer. */
  version: string | null;
}

export type CompareReply = { ok: true; outcome: CompareOutcome } | { ok: false; message: string };

const port = parentPort;
let database: Database<PublishingDB> | null = null;
const kept: DiffsKept = new Map();
if (port) {
  port.on('message', async (job: CompareJob) => {
    try {
      database ??= openDatabase<PublishingDB>(job.databaseUrl);
      const outcome = await comparePage(releaseNodesRepository(database.db), job.productId, job.from, job.to, job.page, job.version, kept);
      port.postMessage({ ok: true, outcome } satisfies CompareReply);
    } catch (e) {
      port.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) } satisfies CompareReply);
    }
  });
  port.postMessage('ready');
}
