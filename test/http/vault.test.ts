/**
 * The Private Vault over HTTP, against a real server on the embedded
 * database with its files in the data directory (docs/vault.md): off by
 * default; an owner turns it on (a member cannot); a dashboard marking then
 * keeps its original and its marked file, sealed (the bytes on disk are not
 * the file's, in 0600 files of 0700 folders, under names that reveal no
 * hash); search, preview, download and a ZIP of a choice give the files back
 * exactly; members see their own files, owners every file of the account,
 * another account none; the limit holds at the exact byte, per account;
 * a file shared by two markings is stored and counted once; deleting
 * removes the bytes from the disk; turning it off may delete everything; and
 * a backup of the database, the blobs and the key file restores (the key's
 * rotation: test/process/vault-key.test.ts); and on PostgreSQL,
 * OPTMARK_VAULT_BYTES fills the plans' room when the database is created.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signInToDashboard, type DashboardSession } from '../support/dashboard.js';
import { generatedImages } from '../support/generated.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { WebClient } from '../support/web-client.js';
import { contains, imageForm, markOnPage, STORAGE_ID, postVaultForm, storedFiles, turnVault, vaultRows } from '../support/vault.js';

const images = await generatedImages();
const JPEG = images.find((g) => g.name === 'baseline.jpg')!.bytes;
const PNG = images.find((g) => g.name.endsWith('.png'))!.bytes;
const PASSWORD = 'correct horse battery staple';
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const scratch = mkdtempSync(join(tmpdir(), 'optmark-vault-'));
const dataDir = freshDataDir();

let t: TestServer;
let owner: DashboardSession;
let member: WebClient;
let stranger: DashboardSession;
const vaultDir = () => join(dataDir, 'vault');

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  t = await startTestServer({ dataDir });
  owner = await signInToDashboard(t, 'vault-studio');
  await t.server.people.createUser({ account: 'vault-studio', email: 'ines@vault.example', role: 'member', password: PASSWORD, actor: 'cli' });
  member = new WebClient(t.url);
  expect((await member.signIn('ines@vault.example', PASSWORD)).status).toBe(303);
  stranger = await signInToDashboard(t, 'vault-elsewhere');
}, 60_000);

afterAll(async () => {
  await t?.close();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the Private Vault', () => {
  let kept: { fileId: string; original: Uint8Array; marked: Uint8Array };

  it('is off by default: a marking keeps nothing, and a member cannot turn it on', async () => {
    const marked = await markOnPage(owner.browser, JPEG, 'before.jpg');
    expect(marked.vault).toBeNull();
    expect((await vaultRows(t.server, 'vault-studio')).objects).toEqual([]);
    const refused = await turnVault(member, true);
    expect(refused.status).toBe(403);
    expect((await json(refused)).code).toBe('role_not_allowed');
    expect((await t.server.vault.status((await t.server.admin.showAccount('vault-studio')).id)).enabled).toBe(false);
  });

  it('an owner turns it on; a marking then keeps the original and the marked file, sealed, in private files', async () => {
    expect((await turnVault(owner.browser, true)).status).toBe(200);
    const marked = await markOnPage(member, JPEG, 'harbour at dawn.jpg');
    expect(marked.vault).toMatchObject({ state: 'stored', fileId: expect.stringMatching(/^vlt_/) });
    kept = { fileId: marked.vault!.fileId!, original: JPEG, marked: marked.bytes };
    const { objects, files } = await vaultRows(t.server, 'vault-studio');
    expect(files).toEqual([
      expect.objectContaining({ id: kept.fileId, state: 'stored', original_sha256: sha256(JPEG), marked_sha256: sha256(marked.bytes), user_email: 'ines@vault.example', record_id: marked.json.recordId }),
    ]);
    expect(objects.map((o) => [o.sha256, o.size, o.state]).sort()).toEqual([[sha256(JPEG), JPEG.byteLength, 'stored'], [sha256(marked.bytes), marked.bytes.byteLength, 'stored']].sort());
    // On disk: two files, 0600 in 0700 folders, named by neither hash, holding neither file's bytes.
    const { files: onDisk, folders } = storedFiles(vaultDir());
    expect(onDisk.map((f) => f.name).sort()).toEqual(objects.map((o) => o.object_name).sort());
    for (const f of onDisk) {
      expect(f.mode).toBe(0o600);
      expect([sha256(JPEG), sha256(marked.bytes)]).not.toContain(f.name);
      const stored = readFileSync(f.path);
      expect(contains(stored, JPEG) || contains(stored, marked.bytes)).toBe(false);
      expect(stored.subarray(0, 4).toString('latin1')).toBe('OMV1');
    }
    expect(folders.every((mode) => mode === 0o700)).toBe(true);
    // Beside them, the storage's id (app/vault/identity.ts), 0600 too.
    expect(statSync(join(vaultDir(), STORAGE_ID)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(vaultDir(), STORAGE_ID), 'utf8')).toMatch(/^[0-9a-f]{32}\n$/);
    // The meter counts the two files, exactly.
    const status = await t.server.vault.status((await t.server.admin.showAccount('vault-studio')).id);
    expect(status).toMatchObject({ enabled: true, used: JPEG.byteLength + marked.bytes.byteLength, files: 1 });
    const page = await owner.browser.page('/vault');
    expect(page.html).toContain(`value="${JPEG.byteLength + marked.bytes.byteLength}"`);
  });

  it('gives both files back exactly, inline (preview) and as downloads; to the member who marked it and to the owner', async () => {
    for (const browser of [member, owner.browser]) {
      for (const [which, bytes] of [['original', kept.original], ['marked', kept.marked]] as const) {
        const inline = await browser.request(`/vault/${kept.fileId}/${which}`, { site: 'same-origin' });
        expect(inline.status).toBe(200);
        expect(inline.headers.get('content-type')).toBe('image/jpeg');
        expect(inline.headers.get('content-disposition')).toBe('inline');
        expect(Buffer.from(await inline.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
        const download = await browser.request(`/vault/${kept.fileId}/${which}?download=1`, { site: 'same-origin' });
        expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename=/);
        expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
      }
    }
  });

  it('a stored file whose bytes were changed in the storage is refused in words with its own code (500 vault_file_unreadable), not as a bug', async () => {
    const marked = await markOnPage(member, PNG, 'damaged.png');
    const { objects } = await vaultRows(t.server, 'vault-studio');
    const object = objects.find((o) => o.sha256 === sha256(PNG))!;
    const path = storedFiles(vaultDir()).files.find((f) => f.name === object.object_name)!.path;
    const whole = readFileSync(path);
    const changed = Buffer.from(whole);
    changed[changed.length - 20]! ^= 1;
    writeFileSync(path, changed);
    try {
      const refused = await member.request(`/vault/${marked.vault!.fileId}/original`, { site: 'same-origin', headers: { Accept: 'application/json' } });
      expect(refused.status).toBe(500);
      expect(await refused.json()).toMatchObject({ code: 'vault_file_unreadable', error: expect.stringContaining('does not authenticate') });
      // The marked copy, stored on its own, still opens.
      expect((await member.request(`/vault/${marked.vault!.fileId}/marked`, { site: 'same-origin' })).status).toBe(200);
    } finally {
      writeFileSync(path, whole);
    }
    expect((await member.request(`/vault/${marked.vault!.fileId}/original`, { site: 'same-origin' })).status).toBe(200);
    expect((await postVaultForm(member, '/vault/delete', [['id', marked.vault!.fileId!], ['confirm', 'yes']])).status).toBe(200);
  });

  it('finds files by name and by hash (whole or its start); members see only their own files, owners every file', async () => {
    const own = await markOnPage(owner.browser, PNG, 'owner-only.png');
    expect(own.vault?.state).toBe('stored');
    const byName = await owner.browser.page('/vault?q=HARBOUR');
    expect(byName.html).toContain(kept.fileId);
    expect(byName.html).not.toContain(own.vault!.fileId!);
    expect((await owner.browser.page(`/vault?q=${sha256(kept.marked)}`)).html).toContain(kept.fileId);
    expect((await owner.browser.page(`/vault?q=${sha256(JPEG).slice(0, 8)}`)).html).toContain(kept.fileId);
    expect((await owner.browser.page('/vault?q=nothing-like-this')).html).toContain('No file matches.');
    const memberPage = await member.page('/vault');
    expect(memberPage.html).toContain(kept.fileId);
    expect(memberPage.html).not.toContain(own.vault!.fileId!);
    const refused = await member.request(`/vault/${own.vault!.fileId!}/original`, { site: 'same-origin', headers: { Accept: 'application/json' } });
    expect(refused.status).toBe(404);
    expect((await json(refused)).code).toBe('vault_file_not_found');
  });

  it('downloads a choice as one ZIP holding each original and marked file', async () => {
    const files = (await vaultRows(t.server, 'vault-studio')).files;
    // Nothing ticked: said in words.
    const none = await postVaultForm(owner.browser, '/vault/download', []);
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('Choose at least one file first: tick its box in the list');
    const response = await postVaultForm(owner.browser, '/vault/download', files.map((f) => ['id', f.id] as [string, string]));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/zip');
    const entries = unzipSync(new Uint8Array(await response.arrayBuffer()));
    expect(Object.keys(entries).sort(), Object.keys(entries).join(', ')).toEqual(['marked/harbour-at-dawn-optout.jpg', 'marked/owner-only-optout.png', 'original/harbour at dawn.jpg', 'original/owner-only.png']);
    expect(Buffer.from(entries['original/harbour at dawn.jpg']!).equals(Buffer.from(JPEG))).toBe(true);
    expect(Buffer.from(entries['marked/harbour-at-dawn-optout.jpg']!).equals(Buffer.from(kept.marked))).toBe(true);
    expect(Buffer.from(entries['original/owner-only.png']!).equals(Buffer.from(PNG))).toBe(true);
  });

  it('without JavaScript a deletion asks first, naming the files; only confirm=yes deletes; turning the vault off with its files asks too', async () => {
    const doomed = await markOnPage(member, PNG, 'doomed.png');
    const id = doomed.vault!.fileId!;
    const asked = await member.request('/vault/delete', { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams([['csrf', await member.csrf()], ['id', id]]).toString() });
    expect(asked.status).toBe(200);
    const page = await asked.text();
    expect(page).toContain('Delete the 1 marking chosen from the vault?');
    expect(page).toContain('<li>doomed.png</li>');
    expect(page).toContain('>Keep it</a>');
    expect(page).toContain(`<input type="hidden" name="id" value="${id}">`);
    expect((await vaultRows(t.server, 'vault-studio')).files.map((f) => f.id)).toContain(id);
    const settings = await owner.browser.request('/vault/settings', { method: 'POST', site: 'same-origin', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams([['csrf', owner.formToken], ['enabled', 'off'], ['files', 'delete']]).toString() });
    const turnOff = await settings.text();
    expect(turnOff).toMatch(/Turn the vault off and delete the \d+ markings it holds\?/);
    expect(turnOff).toContain('>Keep them</a>');
    expect((await t.server.vault.status((await t.server.admin.showAccount('vault-studio')).id)).enabled).toBe(true);
    expect((await postVaultForm(member, '/vault/delete', [['id', id], ['confirm', 'yes']])).status).toBe(200);
    expect((await vaultRows(t.server, 'vault-studio')).files.map((f) => f.id)).not.toContain(id);
  });

  it('another account can never list, fetch, download or delete a file of this one', async () => {
    expect((await stranger.browser.page('/vault')).html).not.toContain(kept.fileId);
    for (const which of ['original', 'marked']) {
      const response = await stranger.browser.request(`/vault/${kept.fileId}/${which}`, { site: 'same-origin', headers: { Accept: 'application/json' } });
      expect(response.status).toBe(404);
      expect((await json(response)).code).toBe('vault_file_not_found');
    }
    for (const path of ['/vault/download', '/vault/delete']) {
      const response = await postVaultForm(stranger.browser, path, [['id', kept.fileId]]);
      expect(response.status).toBe(404);
      expect((await json(response)).code).toBe('vault_file_not_found');
    }
    expect((await vaultRows(t.server, 'vault-studio')).files.map((f) => f.id)).toContain(kept.fileId);
  });

  it('stores a file shared by two markings once, counts it once, and removes its bytes with the last marking that uses it', async () => {
    const account = (await t.server.admin.showAccount('vault-studio')).id;
    const before = await vaultRows(t.server, 'vault-studio');
    const again = await markOnPage(member, JPEG, 'harbour copy.jpg');
    expect(again.vault?.state).toBe('stored');
    const after = await vaultRows(t.server, 'vault-studio');
    // The original is the same file: at most one object more (the new marked file; none when it was marked
    // within the same second as the first, whose marked bytes it then equals), never two.
    const newMarked = before.objects.some((o) => o.sha256 === sha256(again.bytes)) ? 0 : 1;
    expect(after.objects.length).toBe(before.objects.length + newMarked);
    expect(after.objects.filter((o) => o.sha256 === sha256(JPEG))).toHaveLength(1);
    expect((await t.server.vault.status(account)).used).toBe(after.objects.reduce((sum, o) => sum + o.size, 0));
    const originalName = after.objects.find((o) => o.sha256 === sha256(JPEG))!.object_name;
    expect((await postVaultForm(member, '/vault/delete', [['id', kept.fileId], ['confirm', 'yes']])).status).toBe(200);
    expect(storedFiles(vaultDir()).files.map((f) => f.name)).toContain(originalName);
    expect((await postVaultForm(member, '/vault/delete', [['id', again.vault!.fileId!], ['confirm', 'yes']])).status).toBe(200);
    const left = await vaultRows(t.server, 'vault-studio');
    expect(left.objects.map((o) => o.sha256)).not.toContain(sha256(JPEG));
    // Really deleted: the storage holds exactly the objects the database still names.
    expect(storedFiles(vaultDir()).files.map((f) => f.name).sort()).toEqual(left.objects.map((o) => o.object_name).sort());
    expect(storedFiles(vaultDir()).files.map((f) => f.name)).not.toContain(originalName);
  });

  it('holds the limit at the exact byte (the account’s own vault_bytes): a marking that would pass it is marked but not kept', async () => {
    await t.server.admin.createAccount('vault-limit', 'pro');
    const session = await signInToDashboard(t, 'vault-limit');
    const account = (await t.server.admin.showAccount('vault-limit')).id;
    expect((await turnVault(session.browser, true)).status).toBe(200);
    // The sizes of this file's original and marked copy (the same at every marking: the tag's length does not change).
    const first = await markOnPage(session.browser, JPEG, 'sizes.jpg');
    const pair = JPEG.byteLength + first.bytes.byteLength;
    expect((await t.server.vault.status(account)).used).toBe(pair);
    expect((await postVaultForm(session.browser, '/vault/delete', [['id', first.vault!.fileId!], ['confirm', 'yes']])).status).toBe(200);
    expect((await t.server.vault.status(account)).used).toBe(0);

    await t.server.admin.setLimits('vault-limit', { vaultBytes: pair - 1 });
    const over = await markOnPage(session.browser, JPEG, 'one byte over.jpg');
    expect(over.vault).toMatchObject({ state: 'full', used: 0, limit: pair - 1, needed: pair });
    expect(over.vault!.message).toMatch(/^Not kept in your Private Vault: it is full/);
    expect(over.bytes.byteLength).toBe(first.bytes.byteLength);
    expect(await vaultRows(t.server, 'vault-limit')).toEqual({ objects: [], files: [] });

    await t.server.admin.setLimits('vault-limit', { vaultBytes: pair });
    const exact = await markOnPage(session.browser, JPEG, 'exactly.jpg');
    expect(exact.vault?.state).toBe('stored');
    expect(await t.server.vault.status(account)).toMatchObject({ used: pair, limit: pair, files: 1 });
    // Full to the byte: any other file is not kept, and nothing of it is stored.
    const next = await markOnPage(session.browser, PNG, 'another.png');
    expect(next.vault).toMatchObject({ state: 'full', used: pair, limit: pair, needed: PNG.byteLength + next.bytes.byteLength });
    // The same original marked with another value: only the new marked file is needed (the original is kept already).
    const otherValue = imageForm(JPEG, 'exactly.jpg');
    otherValue.append('value', 'DMI-PROHIBITED-GENAIMLTRAINING');
    const batch = await session.browser.app('/app/batches');
    const again = await session.browser.app('/app/mark', { body: otherValue, headers: { 'X-Batch-Id': String(batch.json.id), 'Idempotency-Key': 'vault-other-value' } });
    expect(again.status).toBe(200);
    expect(again.json.vault).toMatchObject({ state: 'full', used: pair, limit: pair, needed: again.bytes!.byteLength, message: expect.stringContaining('this marking needs') });
    expect((await vaultRows(t.server, 'vault-limit')).files).toHaveLength(1);
    expect((await vaultRows(t.server, 'vault-limit')).objects).toHaveLength(2);
    // The no-JavaScript form says it in a header.
    const form = new FormData();
    form.append('image', new Blob([PNG]), 'plain.png');
    const plain = await session.browser.upload('/mark', form);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('optmark-vault')).toBe('full');
  });

  it('never counts the same free bytes twice: of ten markings kept at once, exactly those that fit are stored', async () => {
    await t.server.admin.createAccount('vault-race', 'pro');
    const { user } = await t.server.people.createUser({ account: 'vault-race', email: 'race@vault.example', role: 'owner', password: PASSWORD, actor: 'cli' });
    const account = (await t.server.admin.showAccount('vault-race')).id;
    await t.server.vault.setEnabled(user, 'pro', true, false, null);
    const size = 64 * 1024;
    await t.server.admin.setLimits('vault-race', { vaultBytes: 3 * 2 * size + size });
    const pair = () => {
      const original = randomBytes(size);
      const marked = randomBytes(size);
      return { original: { bytes: original, sha256: sha256(original), mimeType: 'image/jpeg', name: 'o.jpg' }, marked: { bytes: marked, sha256: sha256(marked), mimeType: 'image/jpeg', name: 'm.jpg' } };
    };
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => t.server.vault.keep({ account: { id: account }, user, recordId: Promise.resolve(null), batchId: null, ...pair() })));
    expect(outcomes.filter((o) => o.state === 'stored')).toHaveLength(3);
    expect(outcomes.filter((o) => o.state === 'full')).toHaveLength(7);
    expect(await t.server.vault.status(account)).toMatchObject({ used: 6 * size, files: 3 });
    expect((await vaultRows(t.server, 'vault-race')).objects).toHaveLength(6);
  });

  it('turned off, keeps what it holds unless asked; asked, deletes every file and its bytes', async () => {
    const account = (await t.server.admin.showAccount('vault-studio')).id;
    expect((await turnVault(owner.browser, false, 'keep')).status).toBe(200);
    const off = await markOnPage(owner.browser, JPEG, 'while off.jpg');
    expect(off.vault).toBeNull();
    expect((await t.server.vault.status(account)).files).toBeGreaterThan(0);
    expect((await turnVault(owner.browser, false, 'delete')).status).toBe(200);
    expect(await vaultRows(t.server, 'vault-studio')).toEqual({ objects: [], files: [] });
    expect((await t.server.vault.status(account)).used).toBe(0);
    const names = storedFiles(vaultDir()).files.map((f) => f.name);
    const others = [...(await vaultRows(t.server, 'vault-limit')).objects, ...(await vaultRows(t.server, 'vault-race')).objects].map((o) => o.object_name);
    expect(names.sort()).toEqual(others.sort());
  });

  it('an account moved to the Free plan keeps its files until its owner turns the vault off with them deleted; it cannot be turned on again there', async () => {
    const session = await signInToDashboard(t, 'vault-downgraded');
    expect((await turnVault(session.browser, true)).status).toBe(200);
    expect((await markOnPage(session.browser, JPEG, 'before the move.jpg')).vault?.state).toBe('stored');
    await t.server.admin.setPlan('vault-downgraded', 'free');
    expect((await vaultRows(t.server, 'vault-downgraded')).files).toHaveLength(1);
    expect((await turnVault(session.browser, true)).status).toBe(403);
    // The page tells the owner, and offers the deletion.
    const page = (await session.browser.page('/vault')).html;
    expect(page).toContain('still holds 1 marking kept before it moved to the Free plan');
    expect(page).toContain('id="vault-delete-all"');
    expect(page).toContain('this plan keeps nothing new');
    // What it holds is still the owner's to download.
    const kept = (await vaultRows(t.server, 'vault-downgraded')).files[0]!;
    expect((await session.browser.request(`/vault/${kept.id}/original`, { site: 'same-origin' })).status).toBe(200);
    expect((await turnVault(session.browser, false, 'delete')).status).toBe(200);
    expect((await session.browser.page('/vault')).html).not.toContain('id="vault-delete-all"');
    expect(await vaultRows(t.server, 'vault-downgraded')).toEqual({ objects: [], files: [] });
  });

  it('restores from a backup of the database, the blobs and the key file', async () => {
    const session = await signInToDashboard(t, 'vault-backup');
    expect((await turnVault(session.browser, true)).status).toBe(200);
    const marked = await markOnPage(session.browser, PNG, 'keep me.png');
    const fileId = marked.vault!.fileId!;
    const email = (await t.server.people.listUsers('vault-backup'))[0]!.email;
    // The backup of docs/operations.md: the server stopped, the data directory copied whole (database, vault, key files).
    await t.close();
    const backup = join(scratch, 'backup');
    cpSync(dataDir, backup, { recursive: true });
    const restored = join(scratch, 'restored');
    cpSync(backup, restored, { recursive: true });
    t = await startTestServer({ dataDir: restored });
    const browser = new WebClient(t.url);
    const password = 'a restored password!';
    await t.server.people.createUser({ account: 'vault-backup', email: `second-${email}`, role: 'owner', password, actor: 'cli' });
    expect((await browser.signIn(`second-${email}`, password)).status).toBe(303);
    const original = await browser.request(`/vault/${fileId}/original`, { site: 'same-origin' });
    expect(Buffer.from(await original.arrayBuffer()).equals(Buffer.from(PNG))).toBe(true);
    const markedBack = await browser.request(`/vault/${fileId}/marked`, { site: 'same-origin' });
    expect(Buffer.from(await markedBack.arrayBuffer()).equals(marked.bytes)).toBe(true);
    // (afterAll stops this server; the restored directory goes with the scratch directory.)
  });
});

describe('on PostgreSQL, with OPTMARK_VAULT_BYTES', () => {
  it('the setting fills the plans’ room when the database is created; a marking past it is not kept, and an account’s own room holds at its byte', async () => {
    const seeded = await startTestServer({ backend: 'postgres', env: { OPTMARK_VAULT_BYTES: '1000' } });
    try {
      expect((await seeded.server.admin.planLimits()).pro.vaultBytes).toBe(1000);
      expect((await seeded.server.admin.planLimits()).free.vaultBytes).toBe(0);
      const session = await signInToDashboard(seeded, 'vault-pg');
      const account = (await seeded.server.admin.showAccount('vault-pg')).id;
      expect((await turnVault(session.browser, true)).status).toBe(200);
      const over = await markOnPage(session.browser, PNG, 'over.png');
      const pair = PNG.byteLength + over.bytes.byteLength;
      expect(over.vault).toMatchObject({ state: 'full', used: 0, limit: 1000, needed: pair });
      await seeded.server.admin.setLimits('vault-pg', { vaultBytes: pair });
      const exact = await markOnPage(session.browser, PNG, 'exactly.png');
      expect(exact.vault?.state).toBe('stored');
      expect(await seeded.server.vault.status(account)).toMatchObject({ used: pair, limit: pair, files: 1 });
      expect((await markOnPage(session.browser, JPEG, 'over.jpg')).vault).toMatchObject({ state: 'full', used: pair, limit: pair });
      expect((await vaultRows(seeded.server, 'vault-pg')).files).toHaveLength(1);
      expect((await postVaultForm(session.browser, '/vault/delete', [['id', exact.vault!.fileId!], ['confirm', 'yes']])).status).toBe(200);
      expect(await seeded.server.vault.status(account)).toMatchObject({ used: 0, files: 0 });
      expect(storedFiles(join(seeded.dataDir, 'vault')).files).toEqual([]);
    } finally {
      await seeded.close();
    }
  });

  // PostgreSQL runs markings side by side (the embedded database, one at a time): each must see what the
  // markings that held the account's lock before it wrote. It read that as of before it waited: the same file
  // kept by markings at once was written twice (a 500 on the key of its objects), and the limit was passed.
  it('markings kept at once: the same file by six is stored once each, no failure; of ten near the limit, exactly those that fit', async () => {
    const pg = await startTestServer({ backend: 'postgres' });
    try {
      const size = 64 * 1024;
      const keepAll = async (name: string, pairs: ReadonlyArray<ReturnType<typeof pairOf>>) => {
        await pg.server.admin.createAccount(name, 'pro');
        const { user } = await pg.server.people.createUser({ account: name, email: `${name}@vault.example`, role: 'owner', password: PASSWORD, actor: 'cli' });
        const account = (await pg.server.admin.showAccount(name)).id;
        await pg.server.vault.setEnabled(user, 'pro', true, false, null);
        await pg.server.admin.setLimits(name, { vaultBytes: 3 * 2 * size + size });
        const outcomes = await Promise.all(pairs.map((pair) => pg.server.vault.keep({ account: { id: account }, user, recordId: Promise.resolve(null), batchId: null, ...pair })));
        await pg.server.vault.idle();
        return { outcomes: outcomes.map((o) => o.state).sort(), status: await pg.server.vault.status(account), objects: (await vaultRows(pg.server, name)).objects.length };
      };
      const same = pairOf(size);
      expect(await keepAll('vault-pg-same', Array.from({ length: 6 }, () => same))).toEqual({ outcomes: Array(6).fill('stored'), status: expect.objectContaining({ used: 2 * size, files: 6 }), objects: 2 });
      expect(await keepAll('vault-pg-limit', Array.from({ length: 10 }, () => pairOf(size)))).toEqual({
        outcomes: [...Array(7).fill('full'), ...Array(3).fill('stored')],
        status: expect.objectContaining({ used: 6 * size, files: 3 }),
        objects: 6,
      });
    } finally {
      await pg.close();
    }
  });
});

/** A marking's two files, of random bytes (distinct each time). */
function pairOf(size: number) {
  const original = randomBytes(size);
  const marked = randomBytes(size);
  return { original: { bytes: original, sha256: sha256(original), mimeType: 'image/jpeg', name: 'o.jpg' }, marked: { bytes: marked, sha256: sha256(marked), mimeType: 'image/jpeg', name: 'm.jpg' } };
}
