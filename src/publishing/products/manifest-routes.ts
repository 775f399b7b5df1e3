// A vendor route of the product (`/api/products/:id/…`, behind vendor-auth.ts), so it lives with
// the product routes, above the file tree whose manifests it reads (files/manifest.ts).
import { Type } from 'typebox';
import { NotFoundError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problem, problems, VENDOR_SECURITY } from '../openapi.js';
import type { ProductService } from './service.js';
import { vendorAuthentication } from './vendor-auth.js';
import type { FileManifests } from '../files/manifest.js';
import { MAX_LABEL_LENGTH } from '../model/label-limit.js';
import { isLabel } from '../files/tree.js';

const Params = Type.Object({ id: Type.String({ maxLength: 200 }), label: Type.String({ maxLength: MAX_LABEL_LENGTH }) });

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
const LabelFiles = Type.Object({
  label: Type.String(),
  files: Type.Array(
    Type.Object({
      path: Type.String({ description: 'Relative to update-site/<label>/' }),
      size: Type.Integer({ minimum: 0 }),
      sha256: Sha256,
    }),
  ),
  folders: Type.Array(Type.String(), { description: 'Every folder below update-site/<label>/, empty ones too' }),
  archive: Type.Union([Type.Object({ size: Type.Integer({ minimum: 0 }), sha256: Sha256 }), Type.Null()], {
    description: 'update-site/<label>.zip, null without one',
  }),
});

export interface ManifestRoutesOptions {
  products: Pick<ProductService, 'authenticateVendor'>;
  /** The same failed-attempt limiter as the other edit-token routes: one budget per address. */
  limiter: FailureLimiter;
  manifests: FileManifests;
}

/** `GET /api/products/:id/labels/:label/files`: what SFTP shows of a label now (`pier publish` diffs against it). */
export function registerManifestRoutes(app: HttpApp, { products, limiter, manifests }: ManifestRoutesOptions): void {
  // The edit token or a trusted-publishing credential of the product (products/vendor-auth.ts).
  const authenticate = vendorAuthentication(products, limiter);

  app.get(
    '/api/products/:id/labels/:label/files',
    {
      schema: {
        tags: ['files'],
        summary: "Files of a label's uploaded folder with size and SHA-256",
        description:
          'What SFTP shows of update-site/<label>/ now (not the released copy), each file with its size and SHA-256, every folder, and the archive update-site/<label>.zip. `pier publish` uploads only what differs from it.',
        operationId: 'listLabelFiles',
        security: VENDOR_SECURITY,
        params: Params,
        response: { 200: LabelFiles, ...problems(400, 401, 429), 404: problem(404, 'No such product, or no such label name (problem+json `not_found`)') },
      },
      onRequest: authenticate,
    },
    async (req) => {
      // A name no label can have names no folder: 404 rather than a listing of something else.
      if (!isLabel(req.params.label)) throw new NotFoundError(`"${req.params.label}" is not a label`);
      return manifests.label(req.product!.id, req.params.label);
    },
  );
}
