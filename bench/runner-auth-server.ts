// The runner as a separate process for bench/runner-auth.ts: the real service plus one
// unauthenticated reference route that answers a JSON body of a requested size through the
// same app (same hooks, helmet, logging), so the only difference to the measured routes is auth.
import { loadConfig } from '../src/infra/config.js';
import { createRunnerService } from '../src/runner/service.js';

const config = loadConfig(process.env);
const service = await createRunnerService(config);
const bodies = new Map<number, string>();
service.app.get('/bench/reference/:bytes', async (req, reply) => {
  const n = Number((req.params as { bytes: string }).bytes);
  let body = bodies.get(n);
  if (body === undefined) {
    body = JSON.stringify({ pad: 'x'.repeat(Math.max(0, n - 10)) });
    bodies.set(n, body);
  }
  return reply.type('application/json; charset=utf-8').send(body);
});
const address = await service.app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
const stop = async () => {
  await service.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
