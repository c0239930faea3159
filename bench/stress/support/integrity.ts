/**
 * A structural check of an embedded database after a fault: PostgreSQL's
 * amcheck (shipped with PGlite) verifies every table's heap pages
 * (`verify_heapam`) and every B-tree index against its table
 * (`bt_index_check` with `heapallindexed`), so a torn page, a broken index
 * or a row an index lost is found, not just "the server opened it". Run it
 * with the server stopped: the database takes one process at a time.
 */
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { amcheck } from '@electric-sql/pglite/contrib/amcheck';

export interface Integrity {
  readonly tables: number;
  readonly indexes: number;
  readonly rows: number;
  /** One line per problem amcheck reported; empty when the database is sound. */
  readonly problems: readonly string[];
}

export async function checkEmbeddedIntegrity(dataDir: string): Promise<Integrity> {
  const db = await PGlite.create(join(dataDir, 'pgdata'), { extensions: { amcheck } });
  try {
    await db.exec('create extension if not exists amcheck');
    const problems: string[] = [];
    const tables = (await db.query<{ name: string }>(`select c.oid::regclass::text as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'r' and n.nspname = 'public'`)).rows;
    let rows = 0;
    for (const { name } of tables) {
      try {
        const heap = await db.query<{ blkno: number; msg: string }>(`select blkno, msg from verify_heapam($1::regclass, check_toast => true)`, [name]);
        for (const r of heap.rows) problems.push(`${name} block ${r.blkno}: ${r.msg}`);
        rows += Number((await db.query<{ n: string }>(`select count(*)::text as n from ${name}`)).rows[0]!.n);
      } catch (error) {
        // A page too broken to check (a bad page header) is refused outright.
        problems.push(`${name}: ${(error as Error).message}`);
      }
    }
    const indexes = (await db.query<{ name: string }>(
      `select c.oid::regclass::text as name from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am a on a.oid = c.relam join pg_namespace n on n.oid = c.relnamespace where a.amname = 'btree' and n.nspname = 'public'`,
    )).rows;
    for (const { name } of indexes) {
      try {
        await db.query(`select bt_index_check($1::regclass, heapallindexed => true)`, [name]);
      } catch (error) {
        problems.push(`${name}: ${(error as Error).message}`);
      }
    }
    return { tables: tables.length, indexes: indexes.length, rows, problems };
  } finally {
    await db.close();
  }
}
