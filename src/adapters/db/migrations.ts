/**
 * The schema, one migration per step, run at start by Kysely's Migrator on
 * both back ends. SQL stays at the PostgreSQL 15 level (Debian's server) even
 * though the embedded PGlite is PostgreSQL 18.
 */
import { sql, type Kysely } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely/migration';

function statements(...ddl: string[]): Migration {
  return {
    async up(db: Kysely<unknown>) {
      for (const statement of ddl) await sql.raw(statement).execute(db);
    },
  };
}

const MIGRATIONS: Record<string, Migration> = {
  '001-accounts-keys-usage': statements(
    `create table accounts (
       id uuid primary key,
       name text not null unique check (length(name) between 1 and 100),
       plan text not null check (plan in ('free', 'pro', 'lifetime')),
       created_at timestamptz not null
     )`,
    `create table api_keys (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       prefix text not null,
       digest bytea not null unique,
       created_at timestamptz not null,
       expires_at timestamptz,
       revoked_at timestamptz,
       last_used_at timestamptz
     )`,
    `create index api_keys_account on api_keys (account_id)`,
    // One row per account, month and operation; the conditional increment on
    // this row is what makes the monthly limit exact under concurrency.
    `create table usage (
       account_id uuid not null references accounts (id) on delete cascade,
       period text not null check (period ~ '^[0-9]{4}-[0-9]{2}$'),
       operation text not null check (operation in ('protect', 'verify')),
       used integer not null check (used >= 0),
       primary key (account_id, period, operation)
     )`,
    // Units reserved by calls still in flight. A call that returns 200 deletes
    // its row; one that fails deletes it and gives the unit back; rows left by
    // a crash are given back by the sweep after the reservation TTL.
    `create table reservations (
       id uuid primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       period text not null,
       operation text not null,
       created_at timestamptz not null
     )`,
    `create index reservations_created on reservations (created_at)`,
  ),
  // Which server holds each reservation, and whether that server is alive: a
  // reservation is given back only once its server has stopped renewing its
  // lease (heartbeat) for the reservation TTL. The TTL alone gave back units
  // of calls still running (a call that outlived it was then not counted, and
  // a limit of 1 let two calls through). Rows from before this step name no
  // server and are judged by their age, as before.
  '002-instances': statements(
    `create table instances (
       id uuid primary key,
       started_at timestamptz not null,
       heartbeat_at timestamptz not null
     )`,
    `alter table reservations add column instance_id uuid`,
    // Given back by a sweep while its call may still run: kept, so that the
    // call's commit counts it again and a refund does not give it back twice.
    `alter table reservations add column swept boolean not null default false`,
    `create index reservations_instance on reservations (instance_id)`,
  ),
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
