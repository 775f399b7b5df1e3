import { UsageError } from '../infra/errors.js';

/**
 * A staff crawl reads the update site from the download host, as the platform's installer
 * would (spec: the crawler reads what users download). When nothing answers there, every fetch
 * fails and the crawl would be stored as fatal, blocking `pier staff enable` until the next
 * crawl: refuse before anything is recorded, and say what to start. Any HTTP answer counts: a
 * proxy in front of the host may not route /healthz.
 */
export async function requireDownloadHost(downloadUrl: string, unchanged: string, timeoutMs = 5000): Promise<void> {
  try {
    const res = await fetch(`${downloadUrl}/healthz`, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await res.body?.cancel();
  } catch (err) {
    const inner = (err as { cause?: { code?: string; message?: string } }).cause;
    const cause = inner?.code ?? inner?.message ?? (err instanceof Error ? err.message : String(err));
    throw new UsageError(
      `the download host ${downloadUrl} does not answer (${cause}); the crawl reads the update site from it. Start it (\`pier serve\`, or \`pier serve --only downloads\`), or set PIER_DOWNLOAD_URL to where it runs, and try again. ${unchanged}`,
    );
  }
}
