import { Type } from 'typebox';
import type { Config } from '../../infra/config.js';
import type { HttpApp } from '../../infra/http.js';
import { NotFoundError } from '../../infra/errors.js';
import { problems, PUBLIC_SECURITY } from '../openapi.js';
import { type HostKey, hostKeyDir, loadOrCreateHostKeys } from '../sftp/host-keys.js';
import { VENDOR_CLI_PATH, type VendorCli, vendorCliFile } from './vendor-cli.js';

const PublishingInfo = Type.Object({
  baseUrl: Type.String(),
  downloadUrl: Type.String(),
  sftp: Type.Object({
    host: Type.String(),
    port: Type.Integer(),
    hostKeys: Type.Array(
      Type.Object({
        type: Type.String({ description: 'ssh-ed25519, ecdsa-sha2-nistp256' }),
        fingerprint: Type.String({ description: 'SHA256:… as ssh-keygen -lf prints it' }),
      }),
    ),
  }),
  trustedPublishing: Type.Object({
    tokenEndpoint: Type.String(),
    audience: Type.String({ description: 'The audience a CI ID token must carry' }),
  }),
  cli: Type.Unsafe<{ url: string; sha256: string } | null>({
    type: ['object', 'null'],
    description: "The vendor's one-file `pier` (publish, ci): `curl -fsSLO <url> && node pier.mjs publish …`; null when this server has not built it",
    properties: { url: { type: 'string' }, sha256: { type: 'string', description: 'hex SHA-256 of the file' } },
    required: ['url', 'sha256'],
  }),
});

/**
 * `GET /api/publishing` (public): everything a vendor's tools need besides the base URL, so
 * `pier publish --server <base url>` needs no other setting. The host-key
 * fingerprints let a client pin the SFTP server's key over HTTPS instead of trusting it on
 * first use.
 */
export function registerInfoRoutes(app: HttpApp, config: Config, options: { hostKeys?: () => HostKey[]; vendorCli?: () => VendorCli | null } = {}): void {
  const vendorCli = options.vendorCli ?? vendorCliFile();
  const { publishing } = config;
  // The keys the SFTP part presents live in the shared storage (sftp/host-keys.ts); read at
  // every request (two small files), so a key an operator replaced shows at once. Created here
  // when this instance runs before any SFTP part did: creation is create-if-absent, so both
  // end up with the same keys.
  const hostKeys = options.hostKeys ?? (() => loadOrCreateHostKeys(hostKeyDir(publishing.storageDir)));
  // config.publishing.oidc is trusted publishing's; the base URL until it is set.
  const audience = (publishing as { oidc?: { audience?: string } }).oidc?.audience ?? publishing.baseUrl;
  app.get(
    '/api/publishing',
    {
      schema: {
        tags: ['publishing'],
        summary: 'Where to upload and how to authenticate: SFTP address and host keys, download URL, trusted publishing',
        operationId: 'getPublishingInfo',
        security: PUBLIC_SECURITY,
        response: { 200: PublishingInfo, ...problems(400) },
      },
    },
    async () => ({
      baseUrl: publishing.baseUrl,
      downloadUrl: publishing.downloadUrl,
      sftp: {
        host: publishing.sftpHost,
        port: publishing.sftpPort,
        hostKeys: hostKeys().map((k) => ({ type: k.type, fingerprint: k.fingerprint })),
      },
      trustedPublishing: { tokenEndpoint: `${publishing.baseUrl}/api/oidc/token`, audience },
      cli: ((cli) => (cli ? { url: `${publishing.baseUrl}${VENDOR_CLI_PATH}`, sha256: cli.sha256 } : null))(vendorCli()),
    }),
  );

  // Not under /api/: a file to download, not an operation.
  app.get(VENDOR_CLI_PATH, async (req, reply) => {
    const cli = vendorCli();
    if (!cli) throw new NotFoundError('this server has no vendor CLI built (npm ci or npm run build:ui builds dist/cli/pier.mjs)');
    const etag = `"${cli.sha256}"`;
    reply.header('etag', etag).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff');
    if (req.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type('text/javascript; charset=utf-8').send(cli.data);
  });
}
