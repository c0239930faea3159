/** Table types for Kysely, matching migrations.ts. */
import type { ColumnType } from 'kysely';

type Timestamp = ColumnType<Date, Date, Date>;

export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  created_at: Timestamp;
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

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  reservations: ReservationsTable;
  instances: InstancesTable;
}
