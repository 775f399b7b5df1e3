import type { Command } from 'commander';
import { startDraining } from '../infra/readiness.js';
import { loadConfig } from '../infra/config.js';
import { lowerOwnPriority } from '../infra/priority.js';
import { drainDelaySkipped, endWithParent, PART_PROCESS_ENV, startPartProcess } from './part-process.js';
import { startupSummary } from './startup-summary.js';

interface Running {
  url: string;
  close(drainMs?: number, options?: { delay?: boolean }): Promise<void>;
  products?: number;
  setupLink?: string | null;
  /** A part in a process of its own: it gets the signal itself and keeps its own listeners open for the drain delay. */
  ownProcess?: boolean;
}

interface Part {
  name: string;
  start(): Promise<Running>;
}

const PARTS = ['web', 'downloads', 'sftp', 'runner'] as const;

/**
 * Nice value of `pier serve`'s own process when the download host runs apart: pages, SFTP
 * sessions, crawls and the runner yield the CPU to downloads (every P2 install waits on them)
 * when it is short, and take all of it otherwise.
 */
const VENDOR_WORK_NICE = 5;

/** Nice value of the SFTP server's own process beside the web part (see `sftpApart`). */
const SFTP_APART_NICE = 10;

/** Past PIER_DRAIN_SECONDS, the time the parts get to close their databases before the process exits anyway. */
const STOP_GRACE_MS = 5000;

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('start the publishing web + REST API, the download host, the SFTP server and the runner (each part can run alone)')
    .option('--only <parts>', `comma-separated parts to start: ${PARTS.join(',')}`, PARTS.join(','))
    .action(async (opts: { only: string }) => {
      const config = loadConfig();
      const wanted = opts.only.split(',').map((s) => s.trim()).filter(Boolean);
      const unknown = wanted.filter((w) => !(PARTS as readonly string[]).includes(w));
      if (unknown.length) {
        throw new Error(`unknown part(s) ${unknown.join(', ')}; available: ${PARTS.join(', ')}`);
      }
      // Loaded here, not with the command line: the other commands and `pier --help` need neither.
      const [{ shareSqliteHandles }, { startServeMetrics }] = await Promise.all([import('../infra/database/index.js'), import('../infra/metrics/serve.js')]);
      const partProcess = process.env[PART_PROCESS_ENV] === '1';
      // The parts of this process share one handle per SQLite file (see shareSqliteHandles).
      shareSqliteHandles();
      const downloadsApart = wanted.includes('downloads') && wanted.length > 1;
      // SFTP sessions are one vendor's bulk work (thousands of uploads, listings of big folders,
      // renames of whole labels): beside other parts they get a process of their own too, at a
      // lower priority than pages, so a vendor's upload never holds up another product's page.
      const sftpApart = wanted.includes('sftp') && wanted.length > 1;
      if (partProcess) endWithParent();
      let stopping = false;
      const running: Running[] = [];
      const names = (): string => wanted.join(', ');
      /**
       * SIGTERM or Ctrl-C drains: /readyz answers 503 at once; after SIGTERM the listeners stay
       * open for PIER_DRAIN_DELAY_SECONDS (answering as usual, /readyz 503), so a load balancer
       * probing readiness sees the 503 and stops sending before connections are refused; then
       * listeners stop taking connections, requests, downloads and SFTP transfers in flight get
       * PIER_DRAIN_SECONDS to finish, held claims answer now. A second signal stops at once.
       * Ctrl-C skips the delay: a person at a terminal, not a balancer, is waiting.
       */
      const stop = async (code = 0, drainMs = 0, asked = 0, why = 'stopping') => {
        if (stopping) {
          // A part's own process gets the signal twice when a whole process group is signalled
          // (systemd's default): once from the sender, once from its parent. That is no
          // operator's "stop now", or a group SIGTERM would cut every download in flight.
          if (!partProcess) process.exit(code);
          return;
        }
        stopping = true;
        startDraining();
        // A part's own process whose parent stops on Ctrl-C closes at once too.
        const delayMs = partProcess && drainDelaySkipped() ? 0 : asked;
        console.error(
          `pier: draining (${why}; ${names()}): /readyz answers 503${delayMs > 0 ? `; listeners close in ${delayMs / 1000} s (PIER_DRAIN_DELAY_SECONDS)` : '; listeners close now'}, then work in flight gets up to ${drainMs / 1000} s (PIER_DRAIN_SECONDS)`,
        );
        // The bound holds whatever hangs past the listeners' drain: a database that accepts
        // connections and never answers keeps pool clients (and loops waiting on them) busy.
        setTimeout(() => {
          console.error(`pier: stopped (${names()}; cut: still closing ${(delayMs + drainMs + STOP_GRACE_MS) / 1000} s after the signal)`);
          process.exit(code);
        }, delayMs + drainMs + STOP_GRACE_MS).unref();
        // A part in its own process is told now: it keeps its own listeners open as long.
        const apart = running.filter((r) => r.ownProcess);
        const here = running.filter((r) => !r.ownProcess);
        await Promise.allSettled([
          ...apart.map((r) => r.close(drainMs, { delay: delayMs > 0 })),
          (async () => {
            if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
            console.error(`pier: listeners closed (${names()}); waiting for work in flight`);
            await Promise.allSettled(here.map((r) => r.close(drainMs)));
          })(),
        ]);
        console.error(`pier: stopped (${names()})`);
        process.exit(code);
      };
      // Before any part is built: each looks once, when built, whether metrics are on.
      const metrics = await startServeMetrics(config, { partProcess: partProcess ? (wanted[0] ?? null) : null, partsApart: downloadsApart || sftpApart });
      if (metrics) {
        running.push(metrics);
        console.error(`pier: metrics listening on ${metrics.url}`);
      }
      /** A part in a process of its own (see startPartProcess); its end stops the other parts. */
      const apart = async (name: string) => {
        const part = await startPartProcess(name, (why) => {
          console.error(`pier: ${why}; stopping the other parts too`);
          void stop(1, 0, 0, why);
        }, metrics?.partProcess);
        return { ...part, ownProcess: true };
      };
      const parts: Part[] = [];
      if (wanted.includes('web')) {
        parts.push({
          name: 'web',
          async start() {
            // Loaded on demand so each part (and every other command) starts without the others' code.
            const { createPublishingService } = await import('../publishing/service.js');
            const svc = await createPublishingService(config);
            const addr = await svc.app.listen({ host: config.host, port: config.publishing.httpPort });
            return { url: addr, close: (drainMs) => svc.close(drainMs, { cutCrawls: true }), products: (await svc.products.list()).length };
          },
        });
      }
      if (wanted.includes('downloads')) {
        parts.push({
          name: 'downloads',
          async start() {
            // Beside other parts, the download host gets a process of its own (see startPartProcess).
            if (downloadsApart) {
              return apart('downloads');
            }
            const { startDownloads } = await import('../publishing/downloads/index.js');
            const d = await startDownloads(config);
            return { url: `${d.url} (public URL ${config.publishing.downloadUrl})`, close: (drainMs) => d.close(drainMs) };
          },
        });
      }
      if (wanted.includes('sftp')) {
        parts.push({
          name: 'sftp',
          async start() {
            if (sftpApart) {
              return apart('sftp');
            }
            const { startSftp } = await import('../publishing/sftp/index.js');
            const s = await startSftp(config);
            // The SFTP server's own process beside the web part yields the CPU to pages.
            if (partProcess) lowerOwnPriority(SFTP_APART_NICE);
            // Vendors compare this with their client's first-connect prompt (trust on first use).
            for (const k of s.hostKeys) console.error(`pier: sftp host key ${k.type} ${k.fingerprint}`);
            return { url: `sftp://${s.host}:${s.port}`, close: (drainMs) => s.close(drainMs) };
          },
        });
      }
      if (wanted.includes('runner')) {
        parts.push({
          name: 'runner',
          async start() {
            const { createRunnerService } = await import('../runner/service.js');
            const svc = await createRunnerService(config);
            const addr = await svc.app.listen({ host: config.host, port: config.runner.port });
            return { url: addr, close: (drainMs) => svc.close(drainMs), setupLink: svc.setupLink };
          },
        });
      }
      for (const part of parts) {
        const r = await part.start();
        running.push(r);
        console.error(`pier: ${part.name} listening on ${r.url}`);
        // Once the download host's process runs (it keeps the priority we had when it started),
        // every thread of this one yields to it when the CPU is short: every P2 install waits on
        // downloads. Threads started later (workers, the file system pool) take it too.
        if (part.name === 'downloads' && downloadsApart) lowerOwnPriority(VENDOR_WORK_NICE);
      }
      const products = running.find((r) => r.products !== undefined)?.products;
      const setupLink = running.find((r) => r.setupLink !== undefined)?.setupLink;
      if (!partProcess) {
        console.error(
          startupSummary(config, { parts: parts.map((p) => p.name), ...(products !== undefined ? { products } : {}), ...(setupLink !== undefined ? { runnerSetupLink: setupLink } : {}) }),
        );
      }
      // Ctrl-C reaches a part's own process too: its parent stops it (SIGTERM, or the pipe closing).
      const drainMs = config.drainSeconds * 1000;
      const delayMs = config.drainDelaySeconds * 1000;
      if (partProcess) process.on('SIGINT', () => {});
      else process.on('SIGINT', () => void stop(0, drainMs, 0, 'Ctrl-C'));
      process.on('SIGTERM', () => void stop(0, drainMs, delayMs, 'SIGTERM'));
    });
}
