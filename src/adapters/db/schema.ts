/** Table types for Kysely, matching migrations.ts. */
import type { ColumnType } from 'kysely';

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
  prefix: string;
  digest: Uint8Array;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
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
}

export interface Database {
  accounts: AccountsTable;
  plan_limits: PlanLimitsTable;
  service_settings: ServiceSettingsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  reservations: ReservationsTable;
}
