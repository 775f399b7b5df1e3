// `npm run build:ui` (also run by `npm ci`, `npm start` and `npm test`): the runner's web UI and
// the vendor's one-file `pier` the web part serves at /cli/pier.mjs.
import { buildVendorCli } from '../src/cli/vendor-build.js';
import { buildUi } from '../src/runner/web/ui-build.js';

const m = await buildUi();
console.error(`pier: web UI built (${m.js}, ${(m.jsGzipBytes / 1024).toFixed(1)} KB of JavaScript gzipped)`);
const cli = await buildVendorCli();
console.error(`pier: vendor CLI built (dist/cli/pier.mjs, ${(cli.bytes / 1024).toFixed(0)} KB)`);
