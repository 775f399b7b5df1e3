// Child of `npm run bench crawl`: crawls one URL in a fresh process and reports time and peak RSS.
import { crawlRepository } from '../src/publishing/crawler/crawl.js';

const url = process.argv[2]!;
const t0 = performance.now();
const r = await crawlRepository(url);
const ms = performance.now() - t0;
process.stdout.write(`${JSON.stringify({ ms, maxRssKb: process.resourceUsage().maxRSS, nodes: r.summary.nodes, problems: r.summary.problems })}\n`);
