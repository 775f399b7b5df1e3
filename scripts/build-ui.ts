// `npm run build:ui` (also run by `npm ci`, `npm start` and `npm test`): the runner's web UI.
import { buildUi } from '../src/runner/web/ui-build.js';

const m = await buildUi();
console.error(`pier: web UI built (${m.js}, ${(m.jsGzipBytes / 1024).toFixed(1)} KB of JavaScript gzipped)`);
