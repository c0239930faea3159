/**
 * The Private Vault as the tests use it: a marking through the page
 * script's route, the vault's forms, and what the storage holds (the
 * directory's files, with their modes).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { RunningServer } from '../../src/server/start.js';
import type { WebClient } from './web-client.js';

export function imageForm(bytes: Uint8Array, name: string): FormData {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: 'application/octet-stream' }), name);
  return form;
}

/** A file marked by the page script, as mark.ts sends it: its answer's facts and the marked bytes. */
export async function markOnPage(browser: WebClient, bytes: Uint8Array, name: string, key = `vault-${Math.random()}`) {
  const batch = await browser.app('/app/batches');
  expect(batch.status).toBe(200);
  const marked = await browser.app('/app/mark', { body: imageForm(bytes, name), headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': key } });
  expect(marked.status, JSON.stringify(marked.json)).toBe(200);
  return { json: marked.json, bytes: marked.bytes!, vault: marked.json.vault as { state: string; fileId?: string; message?: string } | null };
}

/** A vault form posted as the page posts it (urlencoded, with the form token); `id` may repeat. */
export async function postVaultForm(browser: WebClient, path: string, fields: Array<[string, string]>): Promise<Response> {
  const csrf = await browser.csrf();
  return browser.request(path, {
    method: 'POST',
    site: 'same-origin',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    body: new URLSearchParams([['csrf', csrf], ...fields]).toString(),
  });
}

/** Turn the vault on or off; a deletion of what it holds is sent confirmed, as the page's second form sends it. */
export const turnVault = (browser: WebClient, on: boolean, files: 'keep' | 'delete' = 'keep') =>
  postVaultForm(browser, '/vault/settings', [['enabled', on ? 'on' : 'off'], ['files', files], ...(files === 'delete' ? [['confirm', 'yes'] as [string, string]] : [])]);

/** The file beside the objects that holds the storage's id (adapters/storage/filesystem.ts). */
export const STORAGE_ID = 'storage-id';

/** Every object file in the vault's directory (not the storage's id), with its mode, and the directory's mode. */
export function storedFiles(root: string): { files: Array<{ name: string; path: string; mode: number }>; folders: number[] } {
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return { files: [], folders: [] };
  }
  const files = entries.filter((name) => name !== STORAGE_ID).map((name) => ({ name, path: join(root, name), mode: statSync(join(root, name)).mode & 0o777 }));
  return { files, folders: [statSync(root).mode & 0o777] };
}

/** The vault's rows of an account: its objects and its files (once the server's markings kept are marked stored). */
export async function vaultRows(server: Pick<RunningServer, 'database' | 'vault'>, account: string) {
  await server.vault.idle();
  const db = server.database.db;
  const objects = (await sql<{ sha256: string; size: string | number; object_name: string; state: string; key_version: number }>`
    select o.sha256, o.size, o.object_name, o.state, o.key_version from vault_objects o join accounts a on a.id = o.account_id where a.name = ${account} order by o.object_name`.execute(db)).rows;
  const files = (await sql<{ id: string; state: string; original_sha256: string; marked_sha256: string; user_email: string; record_id: string | null }>`
    select f.id, f.state, f.original_sha256, f.marked_sha256, f.user_email, f.record_id from vault_files f join accounts a on a.id = f.account_id where a.name = ${account} order by f.created_at`.execute(db)).rows;
  return { objects: objects.map((o) => ({ ...o, size: Number(o.size) })), files };
}

/** Whether `needle` (at least 64 bytes of it, from its middle) appears anywhere in `haystack`. */
export function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  const start = Math.floor(needle.byteLength / 2);
  const slice = Buffer.from(needle.buffer, needle.byteOffset + start, Math.min(64, needle.byteLength - start));
  return Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(slice) !== -1;
}
