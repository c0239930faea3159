/** Table types for Kysely, matching migrations.ts. */
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date, Date>;

export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  created_at: Timestamp;
  /** Overrides of the plan's limits; null: the plan's. */
  protect_limit: ColumnType<number | null, number | null | undefined, number | null>;
  verify_limit: ColumnType<number | null, number | null | undefined, number | null>;
  scans_per_user_per_day: ColumnType<number | null, number | null | undefined, number | null>;
  vault_bytes: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Made before people existed and without users: its first owner's link is still to be handed over. */
  owner_link_pending: ColumnType<boolean, boolean | undefined, boolean>;
  /** Anyone may look up the hash of a file the account marked (migration 006-records). */
  public_record_lookup: ColumnType<boolean, boolean | undefined, boolean>;
  /** The Private Vault keeps the dashboard's markings (migration 008-vault). */
  vault_enabled: ColumnType<boolean, boolean | undefined, boolean>;
}

/** bigint: a string from pg, a number from PGlite. */
type BigInt = ColumnType<number | string, number, number>;

/** One distinct file of an account in the vault (migration 008-vault). */
export interface VaultObjectsTable {
  account_id: string;
  sha256: string;
  size: BigInt;
  object_name: string;
  key_version: number;
  state: string;
  created_at: Timestamp;
}

/** One marking kept in the vault: its original and its marked file (migration 008-vault). */
export interface VaultFilesTable {
  id: string;
  account_id: string;
  user_id: string;
  user_email: string;
  record_id: string | null;
  batch_id: string | null;
  created_at: Timestamp;
  state: string;
  original_sha256: string;
  original_size: BigInt;
  original_type: string;
  original_name: string;
  marked_sha256: string;
  marked_size: BigInt;
  marked_type: string;
  marked_name: string;
}

/** Dated service records (migration 006-records): append-only. */
export interface RecordsTable {
  id: string;
  account_id: string;
  user_id: string;
  user_email: string;
  batch_id: string | null;
  created_at: Timestamp;
  file_name: string;
  sha256_original: string;
  sha256_marked: string;
  value: string;
  /** JSON text: the layers applied. */
  layers: string;
  kid: string;
  public_jws: string;
  private_jws: string;
  thumbnail: Uint8Array | null;
}

export interface PlanLimitsTable {
  plan: string;
  protect_per_month: number;
  verify_per_month: number;
  scans_per_user_per_day: number;
  /** bigint: a string from pg unless parsed, a number from PGlite. */
  vault_bytes: ColumnType<number | string, number, number>;
  report_retention_days: number;
}

export interface ServiceSettingsTable {
  id: ColumnType<boolean, boolean | undefined, never>;
  scan_ceiling_per_day: number;
  scans_paused: boolean;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  user_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** `protect`, `verify` or `protect,verify`. */
  scopes: ColumnType<string, string | undefined, string>;
  prefix: string;
  digest: Uint8Array;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
  /** The integration's name (from its access request, or given at issue). */
  name: ColumnType<string | null, string | null | undefined, string | null>;
  request_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** The key that replaced this one in a roll (this one then ends at its expires_at). */
  replaced_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface AccessRequestsTable {
  id: string;
  account_id: string;
  user_id: string;
  name: string;
  purpose: string;
  monthly_volume: number;
  scopes: string;
  contact: string;
  state: string;
  created_at: Timestamp;
  decided_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  decided_by: ColumnType<string | null, string | null | undefined, string | null>;
  reason: ColumnType<string | null, string | null | undefined, string | null>;
  granted_scopes: ColumnType<string | null, string | null | undefined, string | null>;
  key_days: ColumnType<number | null, number | null | undefined, number | null>;
  reveal_by: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revealed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  key_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface UsageTable {
  account_id: string;
  /** `YYYY-MM` (UTC calendar month). */
  period: string;
  operation: string;
  used: number;
}

export interface ReservationsTable {
  id: string;
  account_id: string;
  period: string;
  operation: string;
  created_at: Timestamp;
  /** The server that holds it (migration 002); null for rows from before. */
  instance_id: string | null;
  /** Given back by a sweep (its server judged gone) while its call may still run. */
  swept: ColumnType<boolean, boolean | undefined, boolean>;
}

/** Servers sharing the database, each with its lease: the last time it said it was alive. */
export interface InstancesTable {
  id: string;
  started_at: Timestamp;
  heartbeat_at: Timestamp;
}

export interface BrakesTable {
  /** SHA-256 (hex) of the brake's name: no address or typed email is kept in clear. */
  key: string;
  /** JSON; null while a first caller holds the key. */
  state: string | null;
  forget_at: Timestamp;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  display_name: ColumnType<string, string | undefined, string>;
  password_hash: string | null;
  role: string;
  operator: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  password_changed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface OneTimeLinksTable {
  id: string;
  digest: Uint8Array;
  purpose: string;
  account_id: string;
  user_id: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface SignupsTable {
  id: string;
  digest: Uint8Array;
  email: string;
  created_at: Timestamp;
  expires_at: Timestamp;
  used_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface AuditLogTable {
  id: ColumnType<number, never, never>;
  at: Timestamp;
  actor: string;
  account_id: string | null;
  action: string;
  /** JSON text. */
  detail: string;
  /** The client's address, for what a person did over HTTP. */
  address: ColumnType<string | null, string | null | undefined, never>;
}

export interface SessionsTable {
  id: string;
  token_digest: Uint8Array;
  user_id: string;
  account_id: string;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  /** What a form did, for the page the browser is sent to next (JSON), or null. */
  notice: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface IdempotencyTable {
  account_id: string;
  route: string;
  key: string;
  request_hash: string;
  state: string;
  status: number | null;
  outcome: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface BatchesTable {
  id: string;
  account_id: string;
  user_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface BatchItemsTable {
  batch_id: string;
  token: string;
}

export interface RecordThumbnailsTable {
  record_id: string;
  bytes: Uint8Array;
}

export interface ScansTable {
  id: string;
  account_id: string;
  user_id: string;
  repository: string;
  ref: string | null;
  with_token: boolean;
  instance_id: string;
  commit: string | null;
  state: string;
  reason: string | null;
  counted: Generated<boolean>;
  created_at: Timestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  expires_at: Timestamp;
  runner: string | null;
  lease_until: Timestamp | null;
  files: number | null;
  processed: Generated<number>;
  fetch_ms: number | null;
  images: Generated<number>;
  opted_out: Generated<number>;
  not_opted_out: Generated<number>;
  failed: Generated<number>;
  skipped: Generated<number>;
  other_files: Generated<number>;
}

export interface ScanItemsTable {
  scan_id: string;
  path: string;
  status: string;
  reason: string | null;
  code: string | null;
  bytes: number;
  sha256: string | null;
  format: string | null;
  signals: string;
  value: string | null;
  provenance: string | null;
  fingerprint: string | null;
}

/** What the vault's bytes are kept in and sealed with (migration 011-vault-identity). */
export interface VaultIdentityTable {
  what: string;
  fingerprint: string;
  recorded_at: Generated<Date>;
}

export interface Database {
  scans: ScansTable;
  scan_items: ScanItemsTable;
  vault_objects: VaultObjectsTable;
  vault_files: VaultFilesTable;
  record_thumbnails: RecordThumbnailsTable;
  records: RecordsTable;
  access_requests: AccessRequestsTable;
  idempotency: IdempotencyTable;
  batches: BatchesTable;
  batch_items: BatchItemsTable;
  sessions: SessionsTable;
  users: UsersTable;
  brakes: BrakesTable;
  one_time_links: OneTimeLinksTable;
  signups: SignupsTable;
  vault_identity: VaultIdentityTable;
  audit_log: AuditLogTable;
  accounts: AccountsTable;
  plan_limits: PlanLimitsTable;
  service_settings: ServiceSettingsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  reservations: ReservationsTable;
  instances: InstancesTable;
}
