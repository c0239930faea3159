/**
 * The schema, one migration per step, run at start by Kysely's Migrator on
 * both back ends. SQL stays at the PostgreSQL 15 level (Debian's server) even
 * though the embedded PGlite is PostgreSQL 18.
 */
import { sql, type Kysely } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely/migration';
import { DEFAULT_LIMIT_SEEDS, type LimitSeeds } from '../../app/ports.js';

function statements(...ddl: Array<string | ReturnType<typeof sql>>): Migration {
  return {
    async up(db: Kysely<unknown>) {
      for (const statement of ddl) await (typeof statement === 'string' ? sql.raw(statement) : statement).execute(db);
    },
  };
}

/** Repository scans per user per UTC day on the plans that have them (the specification's 10). */
export const SCANS_PER_USER_PER_DAY = 10;
/** Days a scan report is kept, per plan. */
export const REPORT_RETENTION_DAYS = { free: 30, pro: 90, lifetime: 90 } as const;

const migrations = (seeds: LimitSeeds): Record<string, Migration> => ({
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
  // Limits live in the database, per plan, with per-account overrides (null:
  // the plan's), so that the server and the CLI always agree. The Free plan
  // has no API access and no dashboard marking: its allowances are 0.
  '002-plan-limits': statements(
    `create table plan_limits (
       plan text primary key check (plan in ('free', 'pro', 'lifetime')),
       protect_per_month integer not null check (protect_per_month >= 0),
       verify_per_month integer not null check (verify_per_month >= 0),
       scans_per_user_per_day integer not null check (scans_per_user_per_day >= 0),
       vault_bytes bigint not null check (vault_bytes >= 0),
       report_retention_days integer not null check (report_retention_days >= 1)
     )`,
    sql`insert into plan_limits values
       ('free', 0, 0, 0, 0, ${REPORT_RETENTION_DAYS.free}),
       ('pro', ${seeds.protectPerMonth}, ${seeds.verifyPerMonth}, ${SCANS_PER_USER_PER_DAY}, ${seeds.vaultBytes}, ${REPORT_RETENTION_DAYS.pro}),
       ('lifetime', ${seeds.protectPerMonth}, ${seeds.verifyPerMonth}, ${SCANS_PER_USER_PER_DAY}, ${seeds.vaultBytes}, ${REPORT_RETENTION_DAYS.lifetime})`,
    `alter table accounts
       add column protect_limit integer check (protect_limit >= 0),
       add column verify_limit integer check (verify_limit >= 0),
       add column scans_per_user_per_day integer check (scans_per_user_per_day >= 0),
       add column vault_bytes bigint check (vault_bytes >= 0)`,
    // One row: the service-wide repository-scan ceiling (scans per UTC day,
    // all accounts together) and whether operators paused new scans.
    `create table service_settings (
       id boolean primary key default true check (id),
       scan_ceiling_per_day integer not null check (scan_ceiling_per_day >= 0),
       scans_paused boolean not null default false
     )`,
    sql`insert into service_settings (scan_ceiling_per_day) values (${seeds.scanCeiling})`,
  ),
  // People: users belong to one account with a role; operators are the
  // service's team. Passwords are argon2id PHC strings, null until set.
  // One-time links (setting up, resetting a password, an invitation) are
  // kept as the SHA-256 of their token. The audit log has no foreign keys:
  // it outlives what it tells about.
  '003-people': statements(
    `create table users (
       id uuid primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       email text not null unique check (email = lower(email) and length(email) between 3 and 254),
       display_name text not null default '' check (length(display_name) <= 100),
       password_hash text,
       role text not null check (role in ('owner', 'member')),
       operator boolean not null default false,
       created_at timestamptz not null,
       disabled_at timestamptz,
       password_changed_at timestamptz
     )`,
    `create index users_account on users (account_id)`,
    `create table one_time_links (
       id text primary key,
       digest bytea not null unique,
       purpose text not null check (purpose in ('setup', 'reset', 'invitation', 'account-setup')),
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid references users (id) on delete cascade,
       created_at timestamptz not null,
       expires_at timestamptz not null,
       used_at timestamptz
     )`,
    `create index one_time_links_user on one_time_links (user_id)`,
    `create table audit_log (
       id bigint generated always as identity primary key,
       at timestamptz not null,
       actor text not null,
       account_id uuid,
       action text not null,
       detail text not null default '{}'
     )`,
    `create index audit_log_account on audit_log (account_id, at)`,
    // Keys belong to a user (null only for keys made before the account had
    // users: the first owner receives them) and carry their scopes.
    `alter table api_keys
       add column user_id uuid references users (id) on delete cascade,
       add column scopes text not null default 'protect,verify' check (scopes in ('protect', 'verify', 'protect,verify'))`,
    `create index api_keys_user on api_keys (user_id)`,
    // Accounts made before people existed get a link for their first owner,
    // written to the first-start file by the next start (once).
    `alter table accounts add column owner_link_pending boolean not null default false`,
    `update accounts set owner_link_pending = true`,
    // Dashboard sessions, found by the SHA-256 of their token (the cookie).
    // The form token is derived from the token, never stored.
    `create table sessions (
       id text primary key,
       token_digest bytea not null unique,
       user_id uuid not null references users (id) on delete cascade,
       account_id uuid not null references accounts (id) on delete cascade,
       created_at timestamptz not null,
       last_seen_at timestamptz not null,
       expires_at timestamptz not null
     )`,
    `create index sessions_user on sessions (user_id, created_at)`,
    `create index sessions_account on sessions (account_id, created_at)`,
    // Repeated image calls (the same Idempotency-Key): only the outcome of
    // the first is kept, never an image, for 24 hours.
    `create table idempotency (
       account_id uuid not null references accounts (id) on delete cascade,
       route text not null,
       key text not null check (length(key) between 1 and 255),
       request_hash text not null,
       state text not null check (state in ('running', 'done')),
       status integer,
       outcome text,
       created_at timestamptz not null,
       expires_at timestamptz not null,
       primary key (account_id, route, key)
     )`,
    `create index idempotency_expires on idempotency (expires_at)`,
    // Browser batches: at most 25 distinct files (idempotency tokens) each.
    `create table batches (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid not null references users (id) on delete cascade,
       created_at timestamptz not null,
       expires_at timestamptz not null
     )`,
    `create table batch_items (
       batch_id text not null references batches (id) on delete cascade,
       token text not null,
       primary key (batch_id, token)
     )`,
  ),
  // Which server holds each reservation, and whether that server is alive: a
  // reservation is given back only once its server has stopped renewing its
  // lease (heartbeat) for the reservation TTL. The TTL alone gave back units
  // of calls still running (a call that outlived it was then not counted, and
  // a limit of 1 let two calls through). Rows from before this step name no
  // server and are judged by their age, as before.
  '004-instances': statements(
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
  // API access (docs/api-access.md): a person's request for a key for one
  // integration, decided by an operator. An approved request is the grant:
  // its key is made only when the requester reveals it (within 14 days),
  // so `key_id` stays null until then. One pending request per integration
  // name per account.
  '005-api-access': statements(
    `create table access_requests (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid not null references users (id) on delete cascade,
       name text not null check (length(name) between 1 and 100),
       purpose text not null check (length(purpose) between 1 and 2000),
       monthly_volume integer not null check (monthly_volume between 0 and 1000000000),
       scopes text not null check (scopes in ('protect', 'verify', 'protect,verify')),
       contact text not null check (length(contact) between 1 and 254),
       state text not null check (state in ('pending', 'approved', 'denied', 'withdrawn')),
       created_at timestamptz not null,
       decided_at timestamptz,
       decided_by text,
       reason text check (length(reason) <= 1000),
       granted_scopes text check (granted_scopes in ('protect', 'verify', 'protect,verify')),
       key_days integer check (key_days between 1 and 3650),
       reveal_by timestamptz,
       revealed_at timestamptz,
       key_id text
     )`,
    `create unique index access_requests_pending_name on access_requests (account_id, lower(name)) where state = 'pending'`,
    `create index access_requests_account on access_requests (account_id, created_at)`,
    `create index access_requests_state on access_requests (state, created_at)`,
    // A key's integration name, the request it came from, and the key it
    // replaced when rolled: a key being rolled out (its successor made, its
    // own end set) is not counted among the account's active keys.
    `alter table api_keys
       add column name text check (length(name) <= 100),
       add column request_id text,
       add column replaced_by text`,
    // Where an audited action came from (the client's address), when a person did it over HTTP.
    `alter table audit_log add column address text`,
    // Append-only: no statement may change or remove a line of the audit log.
    `create function audit_log_append_only() returns trigger language plpgsql as $$
     begin
       raise exception 'the audit log is append-only';
     end
     $$`,
    `create trigger audit_log_append_only before update or delete on audit_log for each row execute function audit_log_append_only()`,
  ),
  // Dated service records (docs/records.md): one per marking done through
  // the dashboard, signed twice (a public JWS and a private one). The
  // person is kept by id and email, not by a foreign key: removing a
  // member must not remove or change the records of what they marked.
  // The batch id is kept the same way (batches are swept after 24 hours).
  // The thumbnail is a small JPEG of the marked image for the certificate.
  // Append-only: no update; a delete only once the account's row is gone
  // (the cascade of an account's deletion).
  '006-records': statements(
    `create table records (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid not null,
       user_email text not null,
       batch_id text,
       created_at timestamptz not null,
       file_name text not null check (length(file_name) <= 1024),
       sha256_original text not null check (sha256_original ~ '^[0-9a-f]{64}$'),
       sha256_marked text not null check (sha256_marked ~ '^[0-9a-f]{64}$'),
       value text not null,
       layers text not null default '[]',
       kid text not null,
       public_jws text not null,
       private_jws text not null,
       thumbnail bytea
     )`,
    `create index records_account_created on records (account_id, created_at desc, id desc)`,
    `create index records_marked on records (sha256_marked)`,
    `create index records_original on records (account_id, sha256_original)`,
    `create index records_batch on records (account_id, batch_id) where batch_id is not null`,
    `create function records_append_only() returns trigger language plpgsql as $$
     begin
       if tg_op = 'DELETE' and not exists (select 1 from accounts where id = old.account_id) then
         return old;
       end if;
       raise exception 'service records are append-only: they are removed only with their account';
     end
     $$`,
    `create trigger records_append_only before update or delete on records for each row execute function records_append_only()`,
    // Whether anyone may look a marked file's hash up (GET /records/{sha256}): off until an owner turns it on.
    `alter table accounts add column public_record_lookup boolean not null default false`,
  ),
  // A record's thumbnail is made after the marking's answer (app/records/thumbnails.ts),
  // so it is kept apart: the record itself is never changed.
  '007-record-thumbnails': statements(
    `create table record_thumbnails (
       record_id text primary key references records (id) on delete cascade,
       bytes bytea not null
     )`,
  ),
  // Repository scans (docs/scans.md) and their reports, one row per image.
  // A scan counts toward its user's scans of the day and the service-wide
  // ceiling while `counted` (a scan with a token whose server stopped first
  // is uncounted). `runner` and `lease_until`: the server running it, which
  // renews the lease as it saves progress; a lease run out means the runner
  // is gone and the scan may be resumed elsewhere.
  '009-scans': statements(
    `create table scans (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid not null references users (id) on delete cascade,
       repository text not null check (length(repository) <= 2048),
       ref text check (length(ref) <= 255),
       with_token boolean not null,
       instance_id text not null,
       commit text,
       state text not null check (state in ('queued', 'running', 'done', 'failed', 'cancelled')),
       reason text,
       counted boolean not null default true,
       created_at timestamptz not null,
       started_at timestamptz,
       finished_at timestamptz,
       expires_at timestamptz not null,
       runner text,
       lease_until timestamptz,
       files integer,
       processed integer not null default 0,
       fetch_ms integer,
       images integer not null default 0,
       opted_out integer not null default 0,
       not_opted_out integer not null default 0,
       failed integer not null default 0,
       skipped integer not null default 0,
       other_files integer not null default 0
     )`,
    `create index scans_account_created on scans (account_id, created_at desc)`,
    `create index scans_counted_day on scans (created_at) where counted`,
    `create index scans_unfinished on scans (state) where state in ('queued', 'running')`,
    `create table scan_items (
       scan_id text not null references scans (id) on delete cascade,
       path text not null,
       status text not null check (status in ('optedOut', 'notOptedOut', 'failed', 'skipped')),
       reason text,
       code text,
       bytes bigint not null,
       sha256 text,
       format text,
       signals text not null default '[]',
       value text,
       provenance text,
       fingerprint text,
       primary key (scan_id, path)
     )`,
  ),
  // The Private Vault (docs/vault.md): off until an owner turns it on. An
  // object is one distinct file of an account (its plaintext size counts
  // toward the account's vault_bytes once), named by the HMAC of the vault
  // key (the name is kept so that a rotation can move it); a file is one
  // marking kept, its original and its marked file. Rows are written down
  // before the bytes (`writing`) and removed after them (`removing`), so a
  // crash leaves work the start's check finishes: never a row without bytes
  // nor bytes without a row. The person and the record are kept by value:
  // removing a member keeps the files they marked.
  '008-vault': statements(
    `alter table accounts add column vault_enabled boolean not null default false`,
    `create table vault_objects (
       account_id uuid not null references accounts (id) on delete cascade,
       sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
       size bigint not null check (size >= 0),
       object_name text not null unique check (object_name ~ '^[0-9a-f]{64}$'),
       key_version integer not null check (key_version > 0),
       state text not null check (state in ('writing', 'stored', 'removing')),
       created_at timestamptz not null,
       primary key (account_id, sha256)
     )`,
    `create index vault_objects_unsettled on vault_objects (state, created_at) where state <> 'stored'`,
    `create index vault_objects_key_version on vault_objects (key_version)`,
    `create table vault_files (
       id text primary key,
       account_id uuid not null references accounts (id) on delete cascade,
       user_id uuid not null,
       user_email text not null,
       record_id text,
       batch_id text,
       created_at timestamptz not null,
       state text not null check (state in ('writing', 'stored')),
       original_sha256 text not null,
       original_size bigint not null,
       original_type text not null,
       original_name text not null check (length(original_name) <= 1024),
       marked_sha256 text not null,
       marked_size bigint not null,
       marked_type text not null,
       marked_name text not null check (length(marked_name) <= 1024),
       foreign key (account_id, original_sha256) references vault_objects (account_id, sha256) on delete cascade,
       foreign key (account_id, marked_sha256) references vault_objects (account_id, sha256) on delete cascade
     )`,
    `create index vault_files_account_created on vault_files (account_id, created_at desc, id desc)`,
    `create index vault_files_original on vault_files (account_id, original_sha256)`,
    `create index vault_files_marked on vault_files (account_id, marked_sha256)`,
    `create index vault_files_writing on vault_files (created_at) where state = 'writing'`,
  ),
  // Sign-ups of visitors (OPTMARK_SIGNUP=open), each confirmed by a link
  // mailed to its address: stored as the link's SHA-256, for 24 hours.
  '010-signups': statements(
    `create table signups (
       id text primary key,
       digest bytea not null unique,
       email text not null check (length(email) <= 254),
       created_at timestamptz not null,
       expires_at timestamptz not null,
       used_at timestamptz
     )`,
    `create index signups_email on signups (email) where used_at is null`,
  ),
  // What the vault's bytes are kept in and sealed with: the storage's id and
  // a fingerprint of each key version. Every server on this database must
  // use that storage and those keys (app/vault/identity.ts).
  '011-vault-identity': statements(
    `create table vault_identity (
       what text primary key,
       fingerprint text not null,
       recorded_at timestamptz not null default now()
     )`,
  ),
  // The brakes on guessing passwords and on invitations (app/people/sign-in-limits.ts,
  // invite-limits.ts): counted here, so that every process on the database sees every try.
  '012-brakes': statements(
    `create table brakes (
       key text primary key,
       state text,
       forget_at timestamptz not null
     )`,
    `create index brakes_forget_at on brakes (forget_at)`,
  ),
  // What a dashboard form did, kept with the session for the page its
  // browser is sent to (Post/Redirect/Get, app/people/sessions.ts): shown
  // once, by that page's next load. JSON: {path, form?, message}.
  '013-session-notices': statements(`alter table sessions add column notice text`),
});

export function migrationProvider(seeds: LimitSeeds = DEFAULT_LIMIT_SEEDS): MigrationProvider {
  return { getMigrations: async () => migrations(seeds) };
}
