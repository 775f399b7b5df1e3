// `npm run bench [name…]`: runs each benchmark with its reference in the same run and prints ratios.
import { benchCrawl } from './crawl.js';
import { benchDownloads } from './downloads.js';
import { benchHostileLoad } from './hostile-load.js';
import { benchMetrics } from './metrics.js';
import { benchPages } from './pages.js';
import { benchPublishingPatch } from './publishing-patch.js';
import { benchPublish } from './publish.js';
import { benchSftp } from './sftp.js';

const benches: Record<string, () => Promise<string>> = {
  'publishing-patch': benchPublishingPatch,
  pages: benchPages,
  crawl: benchCrawl,
  sftp: benchSftp,
  publish: benchPublish,
  downloads: benchDownloads,
  'hostile-load': benchHostileLoad,
  metrics: benchMetrics,
};

const runner = await import('./runner-auth.js').catch(() => null);
if (runner?.benchRunnerAuth) benches['runner-auth'] = runner.benchRunnerAuth;

const oauth = await import('./runner-oauth.js').catch(() => null);
if (oauth?.benchRunnerOAuth) benches['runner-oauth'] = oauth.benchRunnerOAuth;

const claim = await import('./runner-claim.js').catch(() => null);
if (claim?.benchRunnerClaim) benches['runner-claim'] = claim.benchRunnerClaim;

const runsList = await import('./runner-runs.js').catch(() => null);
if (runsList?.benchRunnerRuns) benches['runner-runs'] = runsList.benchRunnerRuns;

const webUi = await import('./runner-ui.js').catch(() => null);
if (webUi?.benchRunnerUi) benches['runner-ui'] = webUi.benchRunnerUi;

const mcp = await import('./runner-mcp.js').catch(() => null);
if (mcp?.benchRunnerMcp) benches['runner-mcp'] = mcp.benchRunnerMcp;

const hostileRunner = await import('./runner-hostile.js').catch(() => null);
if (hostileRunner?.benchRunnerHostile) benches['runner-hostile'] = hostileRunner.benchRunnerHostile;
const hostileSettings = await import('./runner-hostile-settings.js').catch(() => null);
if (hostileSettings?.benchRunnerHostileSettings) benches['runner-hostile-settings'] = hostileSettings.benchRunnerHostileSettings;
const flood = await import('./runner-flood.js').catch(() => null);
if (flood?.benchRunnerFlood) benches['runner-flood'] = flood.benchRunnerFlood;

const startup = await import('./startup.js').catch(() => null);
if (startup?.benchStartup) benches.startup = startup.benchStartup;

const wanted = process.argv.slice(2);
for (const [name, fn] of Object.entries(benches)) {
  if (wanted.length && !wanted.includes(name)) continue;
  console.log(`\n== ${name}`);
  console.log(await fn());
}
