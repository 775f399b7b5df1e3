import { Type } from 'typebox';
import type { HttpApp } from '../../infra/http.js';
import { PUBLIC } from '../auth/access.js';
import { access } from '../auth/authenticate.js';
import type { RunnerContext } from '../context.js';
import pkg from '../../../package.json' with { type: 'json' };

export function registerMetaRoutes(app: HttpApp, _ctx: RunnerContext): void {
  app.get(
    '/api/version',
    {
      config: access(PUBLIC),
      schema: {
        tags: ['meta'],
        summary: 'Deployed version',
        operationId: 'getVersion',
        response: { 200: Type.Object({ name: Type.String(), version: Type.String() }) },
      },
    },
    async () => ({ name: 'pier-runner', version: pkg.version }),
  );
}
