// The embedded database (PGlite: PostgreSQL compiled to WebAssembly) on a
// thread of its own, so that its CPU work does not hold up the HTTP event
// loop. Plain JavaScript on purpose: worker threads load it as it is, from
// src/ under the tests and from dist/ in production.
//
// Messages in:  { id, sql, params }  |  { id, close: true }
// Messages out: { ready: true } once open; { id, rows, affectedRows } or { id, error: { message, code } }
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

const db = await PGlite.create(workerData.path);
parentPort.postMessage({ ready: true });

parentPort.on('message', async (message) => {
  const { id } = message;
  try {
    if (message.close) {
      await db.close();
      parentPort.postMessage({ id, rows: [] });
      parentPort.close();
      return;
    }
    // Without parameters the simple protocol, which accepts several
    // statements; with them, the extended protocol.
    const result = message.params.length > 0 ? await db.query(message.sql, message.params) : (await db.exec(message.sql)).at(-1);
    parentPort.postMessage({ id, rows: result?.rows ?? [], affectedRows: result?.affectedRows });
  } catch (error) {
    parentPort.postMessage({ id, error: { message: String(error?.message ?? error), code: error?.code } });
  }
});
