import type { Config } from '../../infra/config.js';
import {
  ConflictError,
  NotFoundError,
  UnauthorizedError,
  UsageError,
  ValidationError,
  type FieldProblem,
} from '../../infra/errors.js';
import {
  constantTimeEqual,
  generatePassword,
  generateToken,
  hasValidChecksum,
  hashPassword,
  randomId,
  sha256,
  verifyPassword,
} from '../../infra/secrets.js';
import { FIELD_NAMES, type FieldName, type ProductFields } from '../model/fields.js';
import type { ProductPatch } from './patch-schema.js';
import { applyPatch, invalidPatch, type ValidatePatch, validateInProcess, validatePatch } from './patch-validation.js';
import { placeholderWarnings } from './placeholder-warnings.js';
import type { ProductRow, ProductsRepository, RevisionRow } from './repository.js';
import { productIdProblem } from './slug.js';
import type { Publisher } from './publisher.js';
import { labelNoticeProblems, validateLabelsPatch } from '../notices/notices.js';

export const EDIT_TOKEN_PREFIX = 'pier_et_';
export const BEARER_CHALLENGE = 'Bearer realm="pier", charset="UTF-8"';
const RELEASE_KEY = 'platform_release';
let unknownUserHash: Promise<string> | undefined;

export interface IssuedCredentials {
  productId: string;
  pageUrl: string;
  editToken: string;
  sftp: { host: string; port: number; username: string; password: string };
}

export interface ProductView {
  productId: string;
  name: string;
  state: ProductRow['state'];
  pageUrl: string;
  createdAt: string;
  updatedAt: string;
  fields: ProductFields;
}

export interface Revision {
  id: string;
  at: string;
  changedFields: FieldName[];
  changes: Record<string, unknown>;
  tokenId: string;
  clientAddress: string;
}

/**
 * Trusted publishing's side of authentication (trust/service.ts): a `pier_tp_…` credential
 * works wherever the edit token does and as the SFTP password, until it expires.
 */
export interface TrustedCredentials {
  /** The publisher behind `token` if it is a current credential of this product, else null. */
  verify(productId: string, token: string): Promise<Publisher | null>;
  /** Adds what a trusted publisher did to the product's history. */
  record(productId: string, publisher: Publisher, action: 'patch' | 'sftp', clientAddress: string): Promise<void>;
}

/** The prefix of trusted-publishing credentials (trust/service.ts TRUSTED_CREDENTIAL_PREFIX). */
const TRUSTED_PREFIX = 'pier_tp_';

/** Who a vendor request authenticated as: the product, and the CI run when a trusted credential was used. */
export interface VendorAuthentication {
  product: ProductRow;
  publisher: Publisher | null;
}

export interface ProductServiceDeps {
  repo: ProductsRepository;
  /** Trusted-publishing credentials; without it only the edit token and password work. */
  trust?: TrustedCredentials;
  publishing: Config['publishing'];
  now?: () => Date;
  /** Checks a PATCH body; the serving process passes one that runs off its event loop. */
  validate?: ValidatePatch;
  /** The product's uploaded labels (files/reader.ts); PATCHing `labels` needs it. */
  uploadedLabels?: (productId: string) => Promise<Iterable<string>>;
}

function parseFields(row: ProductRow): ProductFields {
  return { ...(JSON.parse(row.fields) as ProductFields), name: row.name };
}

/** Sortable revision ids: time first so equal timestamps still list in write order. */
function revisionId(at: Date): string {
  return `${at.getTime().toString(36).padStart(9, '0')}${randomId(4)}`;
}

export function productService({ repo, publishing, trust, now = () => new Date(), validate = validateInProcess, uploadedLabels }: ProductServiceDeps) {
  const pageUrl = (id: string) => `${publishing.baseUrl}/product/${id}`;

  function view(row: ProductRow): ProductView {
    return {
      productId: row.id,
      name: row.name,
      state: row.state,
      pageUrl: pageUrl(row.id),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      fields: parseFields(row),
    };
  }

  async function mustFind(id: string): Promise<ProductRow> {
    const row = await repo.find(id);
    if (!row) throw new NotFoundError(`no product "${id}"`);
    return row;
  }

  async function authenticateVendor(id: string, authorization: string | undefined): Promise<VendorAuthentication> {
    const row = await repo.find(id);
    if (!row) throw new NotFoundError(`no product "${id}"`);
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) throw new UnauthorizedError('send the product edit token as "Authorization: Bearer <token>"', BEARER_CHALLENGE);
    const token = match[1];
    if (trust && token.startsWith(TRUSTED_PREFIX)) {
      const publisher = await trust.verify(row.id, token);
      if (!publisher) {
        throw new UnauthorizedError(
          'the trusted-publishing credential is not valid for this product or has expired; exchange a new ID token',
          `${BEARER_CHALLENGE}, error="invalid_token"`,
        );
      }
      return { product: row, publisher };
    }
    const valid = hasValidChecksum(token, EDIT_TOKEN_PREFIX) && constantTimeEqual(sha256(token), row.edit_token_hash);
    if (!valid) {
      throw new UnauthorizedError(
        'the edit token is not valid for this product',
        `${BEARER_CHALLENGE}, error="invalid_token"`,
      );
    }
    return { product: row, publisher: null };
  }

  async function authenticateSftpLogin(username: string, password: string): Promise<VendorAuthentication | null> {
    const row = await repo.findBySftpUsername(username);
    if (trust && password.startsWith(TRUSTED_PREFIX)) {
      // The prefix is public, so taking this path reveals nothing; the credential is compared in constant time.
      const publisher = row ? await trust.verify(row.id, password) : null;
      if (!row || !publisher) return null;
      await trust.record(row.id, publisher, 'sftp', '');
      return { product: row, publisher };
    }
    // Spend the same scrypt work for unknown users so timing does not reveal which exist.
    unknownUserHash ??= hashPassword(generatePassword());
    const ok = await verifyPassword(password, row?.sftp_password_hash ?? (await unknownUserHash));
    return row && ok ? { product: row, publisher: null } : null;
  }

  /**
   * Label notices' rules that need the product (notices/notices.ts), for the notices that pass
   * the body's own rules, so they are listed with the body's problems in one answer.
   */
  async function labelRules(row: ProductRow, body: unknown): Promise<(fields: ProductFields) => FieldProblem[]> {
    const sent = typeof body === 'object' && body !== null ? (body as { labels?: unknown }).labels : undefined;
    if (sent === undefined || sent === null) return () => [];
    const notices = validateLabelsPatch(sent, []);
    const uploaded = new Set(uploadedLabels ? await uploadedLabels(row.id) : []);
    return (fields) => labelNoticeProblems(fields.labels, notices, uploaded);
  }

  return {
    pageUrl,
    view,
    validate,

    /** The label notice problems of a body the route schema refused (listed with the schema's). */
    async labelProblems(row: ProductRow, body: unknown): Promise<FieldProblem[]> {
      return (await labelRules(row, body))(parseFields(row));
    },

    async register(id: string, init: { name: string; icon?: string }): Promise<IssuedCredentials> {
      const problem = productIdProblem(id);
      if (problem) throw new UsageError(`invalid product ID "${id}": ${problem}`);
      const fieldsPatch: ProductPatch = { name: init.name, ...(init.icon !== undefined ? { icon: init.icon } : {}) };
      const checked = validatePatch(fieldsPatch);
      if (!checked.ok) {
        throw new ValidationError(checked.errors.map((e) => `${e.field} ${e.message}`).join('; '), checked.errors);
      }
      if (await repo.find(id)) throw new ConflictError(`product "${id}" already exists`, 'product_exists');
      const editToken = generateToken(EDIT_TOKEN_PREFIX);
      const password = generatePassword();
      const at = now().toISOString();
      const fields = applyPatch({ name: '' }, checked.value);
      try {
        await repo.insert({
          id,
          name: fields.name,
          state: 'hidden',
          fields: JSON.stringify(fields),
          edit_token_hash: sha256(editToken),
          edit_token_id: randomId(4),
          sftp_username: id,
          sftp_password_hash: await hashPassword(password),
          created_at: at,
          updated_at: at,
        });
      } catch (e) {
        // Another process registered the same ID between our check and insert.
        if (await repo.find(id)) throw new ConflictError(`product "${id}" already exists`, 'product_exists');
        throw e;
      }
      return {
        productId: id,
        pageUrl: pageUrl(id),
        editToken,
        sftp: { host: publishing.sftpHost, port: publishing.sftpPort, username: id, password },
      };
    },

    async list(): Promise<ProductView[]> {
      return (await repo.list()).map(view);
    },

    async show(id: string): Promise<ProductView> {
      return view(await mustFind(id));
    },

    async history(id: string, limit = 50): Promise<Revision[]> {
      await mustFind(id);
      return (await repo.revisions(id, limit)).map((r: RevisionRow) => ({
        id: r.id,
        at: r.created_at,
        changedFields: JSON.parse(r.changed_fields) as FieldName[],
        changes: JSON.parse(r.changes) as Record<string, unknown>,
        tokenId: r.token_id,
        clientAddress: r.client_address,
      }));
    },

    async rotateEditToken(id: string): Promise<{ productId: string; editToken: string }> {
      const editToken = generateToken(EDIT_TOKEN_PREFIX);
      const ok = await repo.setEditToken(id, sha256(editToken), randomId(4), now().toISOString());
      if (!ok) throw new NotFoundError(`no product "${id}"`);
      return { productId: id, editToken };
    },

    async rotateSftpPassword(id: string): Promise<{ productId: string; username: string; password: string }> {
      const row = await mustFind(id);
      const password = generatePassword();
      await repo.setSftpPassword(id, await hashPassword(password), now().toISOString());
      return { productId: id, username: row.sftp_username, password };
    },

    /**
     * Resolves the product and checks the edit token of `Authorization: Bearer …`. Unknown
     * product: 404 (pages are public, so this reveals nothing). Any token problem: 401.
     */
    async authenticate(id: string, authorization: string | undefined): Promise<ProductRow> {
      return (await authenticateVendor(id, authorization)).product;
    },

    /** `authenticate`, also telling which CI run a trusted-publishing credential belongs to (`req.publisher`). */
    authenticateVendor,

    /** Validates and applies a PATCH; with `dryRun` nothing is stored. */
    async patch(
      row: ProductRow,
      body: ProductPatch,
      options: { dryRun: boolean; clientAddress: string; publisher?: Publisher | null; staff?: boolean },
    ): Promise<{ product: ProductView; warnings: FieldProblem[]; changedFields: FieldName[] }> {
      const checked = await validate(body);
      const labelProblems = await labelRules(row, body);
      const contextual = labelProblems(parseFields(row));
      if (!checked.ok || contextual.length) throw invalidPatch([...(checked.ok ? [] : checked.errors), ...contextual]);
      const release = (await repo.getSetting(RELEASE_KEY)) ?? null;
      const patch = { ...checked.value, warnings: [...checked.value.warnings, ...placeholderWarnings(checked.value.set, release)] };
      if (options.dryRun) {
        const fields = applyPatch(parseFields(row), patch, now().toISOString());
        return { product: { ...view(row), name: fields.name, fields }, warnings: patch.warnings, changedFields: patch.changed };
      }
      const publisher = options.publisher ?? null;
      // A trusted publish is recorded under its credential (`tp:<id>`, the id in its history).
      const token = publisher ? `tp:${publisher.credentialId}` : options.staff ? 'staff' : row.edit_token_id;
      const updated = await repo.updateFields(row.id, (current) => {
        // The edit token may have been rotated since authentication; the fresh row decides.
        if (!publisher && current.edit_token_hash !== row.edit_token_hash) return null;
        // Another PATCH may have changed the notices since the check above.
        const again = labelProblems(parseFields(current));
        if (again.length) throw invalidPatch(again);
        const at = now();
        const fields = applyPatch(parseFields(current), patch, at.toISOString());
        const changes: Record<string, unknown> = {};
        for (const k of patch.changed) changes[k] = fields[k] ?? null;
        return {
          name: fields.name,
          fields: JSON.stringify(fields),
          now: at.toISOString(),
          revision: {
            id: revisionId(at),
            product_id: row.id,
            created_at: at.toISOString(),
            changed_fields: JSON.stringify(FIELD_NAMES.filter((f) => patch.changed.includes(f))),
            changes: JSON.stringify(changes),
            token_id: token,
            client_address: options.clientAddress.slice(0, 64),
          },
        };
      });
      if (!updated) {
        throw new UnauthorizedError('the edit token is not valid for this product', `${BEARER_CHALLENGE}, error="invalid_token"`);
      }
      if (publisher && trust) await trust.record(row.id, publisher, 'patch', options.clientAddress);
      return { product: view(updated), warnings: patch.warnings, changedFields: patch.changed };
    },

    /** A change made by staff without the edit token (`pier staff label-notice`), recorded as token "staff". */
    async staffPatch(id: string, body: ProductPatch) {
      return this.patch(await mustFind(id), body, { dryRun: false, clientAddress: 'staff', staff: true });
    },

    /** The product whose SFTP credentials these are, or null; reads the database every time. */
    async authenticateSftp(username: string, password: string): Promise<ProductRow | null> {
      return (await authenticateSftpLogin(username, password))?.product ?? null;
    },

    /**
     * `authenticateSftp`, also telling which CI run logged in when the password is a
     * trusted-publishing credential of the product (recorded in its history).
     */
    authenticateSftpLogin,

    async setPlatformRelease(version: string): Promise<string> {
      const v = version.trim();
      if (!/^\d+(\.\d+){0,3}$/.test(v)) throw new UsageError(`invalid release "${version}": expected a version like 5.4 or 5.4.1`);
      await repo.putSetting(RELEASE_KEY, v);
      return v;
    },

    async platformRelease(): Promise<string | null> {
      return (await repo.getSetting(RELEASE_KEY)) ?? null;
    },

    /** What the product's page shows literally because no platform release is set (for staff going live). */
    async placeholderWarnings(id: string): Promise<FieldProblem[]> {
      const row = await repo.find(id);
      return row ? placeholderWarnings(parseFields(row), (await repo.getSetting(RELEASE_KEY)) ?? null) : [];
    },
  };
}

export type ProductService = ReturnType<typeof productService>;
