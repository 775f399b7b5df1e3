import { type Kysely, type Migration, sql } from 'kysely';

/*
 * Trusted publishing (docs/vendors.md#publishing-from-ci-with-trusted-publishing). CI ids
 * (repository, owner, project, namespace, run) are kept as text: GitHub and GitLab send them as
 * strings, and some outgrow PostgreSQL's 32-bit integer (GitHub run ids passed 2^31 long ago).
 */

/** A CI identity staff bound to a product (`pier staff trust add`). */
export interface TrustBindingsTable {
  id: string;
  product_id: string;
  provider: 'github' | 'gitlab';
  /** GitHub `owner/repo` or GitLab `group/project` path, as staff gave it. */
  repository: string;
  /** GitHub `repository_id` / GitLab `project_id`. */
  repository_id: string;
  /** GitHub `repository_owner_id` / GitLab `namespace_id`; null until pinned by the first exchange. */
  owner_id: string | null;
  /** GitHub only: the workflow file, `.github/workflows/release.yml`. */
  workflow: string | null;
  /**
   * Optional: the branch or tag the job must run for, `refs/heads/<branch>` or `refs/tags/<tag>`
   * (`*` a wildcard, trust/refs.ts). Rows written before refs had a kind may hold a bare name:
   * a branch.
   */
  ref: string | null;
  environment: string | null;
  created_at: string;
  /** When `owner_id` was pinned by an exchange (trust on first use); null when staff gave it. */
  owner_pinned_at: string | null;
  /** GitLab: 1 when staff allowed pipelines of unprotected branches and tags (`ref_protected` false), else 0. */
  allow_unprotected: number;
}

/** A short-lived `pier_tp_…` credential; only its SHA-256 is kept. */
export interface TrustedCredentialsTable {
  id: string;
  product_id: string;
  binding_id: string;
  token_hash: string;
  /** JSON Publisher (trust/publisher.ts). */
  publisher: string;
  created_at: string;
  expires_at: string;
}

/** ID tokens already exchanged (issuer + `jti`), kept until the token's own expiry: no second exchange. */
export interface OidcUsedTokensTable {
  /** SHA-256 of issuer + NUL + jti (a fixed width whatever the issuer sends). */
  key: string;
  expires_at: string;
}

/** The product's history of what trusted publishers did: exchanges, PATCHes, SFTP logins, releases. */
export interface TrustedPublishesTable {
  id: string;
  product_id: string;
  binding_id: string;
  credential_id: string;
  action: 'exchange' | 'patch' | 'sftp' | 'release';
  provider: 'github' | 'gitlab';
  repository: string;
  workflow: string;
  ref: string;
  run_id: string;
  run_url: string | null;
  /** JSON of action details (a release's label and number), or null. */
  detail: string | null;
  client_address: string;
  created_at: string;
}

export interface TrustTables {
  trust_bindings: TrustBindingsTable;
  trusted_credentials: TrustedCredentialsTable;
  oidc_used_tokens: OidcUsedTokensTable;
  trusted_publishes: TrustedPublishesTable;
}

/** Migration `0011_trusted_publishing` (listed in publishing/db.ts). */
export const trustedPublishingMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('trust_bindings')
      .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
      .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
      .addColumn('provider', 'varchar(16)', (c) => c.notNull())
      .addColumn('repository', 'varchar(512)', (c) => c.notNull())
      .addColumn('repository_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('owner_id', 'varchar(32)')
      .addColumn('workflow', 'varchar(512)')
      .addColumn('ref', 'varchar(512)')
      .addColumn('environment', 'varchar(255)')
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('owner_pinned_at', 'varchar(32)')
      .execute();
    await db.schema.createIndex('trust_bindings_by_identity').on('trust_bindings').columns(['provider', 'repository_id']).execute();
    await db.schema.createIndex('trust_bindings_by_product').on('trust_bindings').columns(['product_id']).execute();
    await db.schema
      .createTable('trusted_credentials')
      .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
      .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
      .addColumn('binding_id', 'varchar(32)', (c) => c.notNull().references('trust_bindings.id').onDelete('cascade'))
      .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
      .addColumn('publisher', 'text', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('trusted_credentials_by_product').on('trusted_credentials').columns(['product_id', 'expires_at']).execute();
    await db.schema
      .createTable('oidc_used_tokens')
      .addColumn('key', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('oidc_used_tokens_by_expiry').on('oidc_used_tokens').columns(['expires_at']).execute();
    await db.schema
      .createTable('trusted_publishes')
      .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
      .addColumn('product_id', 'varchar(64)', (c) => c.notNull().references('products.id').onDelete('cascade'))
      // No reference: the history outlives a binding staff removed.
      .addColumn('binding_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('credential_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('action', 'varchar(16)', (c) => c.notNull())
      .addColumn('provider', 'varchar(16)', (c) => c.notNull())
      .addColumn('repository', 'varchar(512)', (c) => c.notNull())
      .addColumn('workflow', 'varchar(512)', (c) => c.notNull())
      .addColumn('ref', 'varchar(512)', (c) => c.notNull())
      .addColumn('run_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('run_url', 'varchar(1024)')
      .addColumn('detail', 'text')
      .addColumn('client_address', 'varchar(64)', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('trusted_publishes_by_product').on('trusted_publishes').columns(['product_id', 'created_at']).execute();
  },
};

/**
 * Migration `0016_trust_ref_kinds` (listed in publishing/db.ts): bound refs name their kind. A
 * bare name bound before meant a branch (trust/refs.ts) and is written out as one, so listings
 * show what a binding accepts; bindings start refusing unprotected GitLab refs unless staff
 * allow them.
 */
export const trustRefKindsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('trust_bindings').addColumn('allow_unprotected', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await sql`UPDATE trust_bindings SET ref = 'refs/heads/' || ref
      WHERE ref IS NOT NULL AND ref NOT LIKE 'refs/heads/%' AND ref NOT LIKE 'refs/tags/%'`.execute(db);
  },
};
