// The runner as a separate process for bench/runner-auth.ts: the real service plus one
// unauthenticated reference route that answers a JSON body of a requested size through the
// same pipeline as GET /api/me (async handler, JSON.stringify serializer, same hooks, helmet,
// logging), so the only difference to the measured routes is authentication.
import { loadConfig } from '../src/infra/config.js';
import { IDENTITY } from '../src/runner/auth/access.js';
import { createRunnerService } from '../src/runner/service.js';

const config = loadConfig(process.env);
const service = await createRunnerService(config);
// The reference answers a copy of a document registered by the bench (the body GET /api/me
// gave), so its handler and serializer do the same work as the measured route minus auth.
const documents = new Map<string, Record<string, unknown>>();
service.app.put('/bench/reference/:name', async (req) => {
  documents.set((req.params as { name: string }).name, req.body as Record<string, unknown>);
  return { ok: true };
});
service.app.get(
  '/bench/reference/:name',
  { serializerCompiler: () => (data: unknown) => JSON.stringify(data) },
  async (req) => ({ ...documents.get((req.params as { name: string }).name) }),
);
// The same handler behind the /api/me access rule: against the route above this isolates
// authentication from everything else /api/me does.
service.app.get(
  '/bench/reference-authed/:name',
  { config: { access: IDENTITY }, serializerCompiler: () => (data: unknown) => JSON.stringify(data) },
  async (req) => ({ ...documents.get((req.params as { name: string }).name) }),
);
const address = await service.app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
const stop = async () => {
  await service.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
