// The embedded database (PGlite: PostgreSQL compiled to WebAssembly) on a
// thread of its own, so that its CPU work does not hold up the HTTP event
// loop. Plain JavaScript on purpose: worker threads load it as it is, from
// src/ under the tests and from dist/ in production.
//
// Messages in:  { id, sql, params }  |  { id, close: true }
// Messages out: { ready: true } once open; { id, rows, affectedRows } or { id, error: { message, code } }
import { closeSync, fchmodSync, fdatasyncSync, fstatSync, fsyncSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/**
 * PGlite runs PostgreSQL with fsync=off, and its file system could not fsync
 * anyway: a commit reaches the page cache, not the disk, so a power cut or a
 * disk turning read-only would lose the last half-minute of commits (seen:
 * every count of a run). Durability is restored here, the way PostgreSQL
 * itself does it: when a statement has ended a write outside a transaction
 * block (a COMMIT, or a lone INSERT), the WAL segment being written is
 * fdatasync'd before the answer goes back. When the segment changes (every
 * 16 MB of WAL; PostgreSQL checkpoints only at such a change or at close),
 * and at open and close, every file of the database is synced, so that a
 * checkpoint's pages are on disk before anything relies on the WAL it freed.
 * A sync that fails ends the thread (every later call is then a 503 until a
 * restart recovers from what is on disk): after a failed fsync the kernel may
 * drop the unwritten pages and report the next fsync clean, which is why
 * PostgreSQL stops too (data_sync_retry=off).
 */
class Durability {
  segment = undefined;
  fd = undefined;
  unsynced = false;

  constructor(db, dir) {
    this.db = db;
    this.dir = dir;
  }

  /** Note a statement that ran; a plain SELECT writes nothing. */
  ran(sql) {
    if (!/^\s*select\b/i.test(sql)) this.unsynced = true;
  }

  /** After a statement: make what it committed durable. Throws if the disk refuses. */
  async afterStatement() {
    if (!this.unsynced || this.db.isInTransaction()) return;
    const { rows } = await this.db.query('select pg_walfile_name(pg_current_wal_insert_lsn()) as name');
    const name = rows[0].name;
    if (name !== this.segment) {
      this.release();
      syncTree(this.dir);
      this.fd = openSync(join(this.dir, 'pg_wal', name), 'r');
      this.segment = name;
    }
    fdatasyncSync(this.fd);
    this.unsynced = false;
  }

  /** Sync the segment being left, and forget it. */
  release() {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = this.segment = undefined;
    try {
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * fsync every file and directory under `dir` (directories too: renames and
 * unlinks live in them), and make each private on the way: PGlite creates
 * its files 0666 and its directories by the umask, whatever PostgreSQL
 * asked for, so a database in a directory others can enter would be theirs
 * to read and write. Files it creates between two such walks sit in
 * directories already made 0700.
 */
function syncTree(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) syncTree(path);
    else if (entry.isFile()) syncPath(path);
  }
  syncPath(dir);
}

/** Take away what group and others may do with an open file or directory (a read-only file system keeps what it has). */
function makePrivate(fd) {
  const { mode } = fstatSync(fd);
  if ((mode & 0o077) === 0) return;
  try {
    fchmodSync(fd, mode & 0o700);
  } catch (error) {
    if (error?.code !== 'EROFS') throw error;
  }
}

function syncPath(path) {
  const fd = openSync(path, 'r');
  try {
    makePrivate(fd);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const db = await PGlite.create(workerData.path);
const durability = new Durability(db, workerData.path);
// What recovery from a crash or a shutdown checkpoint wrote, on disk before anything new is acknowledged.
syncTree(workerData.path);
parentPort.postMessage({ ready: true });

parentPort.on('message', async (message) => {
  const { id } = message;
  try {
    if (message.close) {
      durability.release();
      await db.close();
      syncTree(workerData.path);
      parentPort.postMessage({ id, rows: [] });
      parentPort.close();
      return;
    }
    durability.ran(message.sql);
    // Without parameters the simple protocol, which accepts several
    // statements; with them, the extended protocol.
    // `all`: the rows of every statement of a multi-statement text (the job queue's).
    const results = message.params.length > 0 ? [await db.query(message.sql, message.params)] : await db.exec(message.sql);
    const result = message.all ? { rows: results.flatMap((r) => r.rows ?? []), affectedRows: results.at(-1)?.affectedRows } : results.at(-1);
    try {
      await durability.afterStatement();
    } catch (error) {
      parentPort.postMessage({ id, error: { message: `the embedded database stopped: its writes could not be synced to disk: ${error?.message ?? error}`, code: error?.code } });
      process.exit(1);
    }
    parentPort.postMessage({ id, rows: result?.rows ?? [], affectedRows: result?.affectedRows });
  } catch (error) {
    parentPort.postMessage({ id, error: { message: String(error?.message ?? error), code: error?.code } });
  }
});
