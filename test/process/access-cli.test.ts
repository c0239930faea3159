/**
 * `optmark access list|approve|deny`, through the admin socket of a running
 * `optmark serve` (the command the service's team uses where it has no
 * browser): requests made on the dashboard are listed pending first,
 * approved with the scopes and expiry given, denied with a reason the
 * requester then reads; a second decision is refused with its code; bad
 * options are usage errors (exit 2) before anything is opened.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataDir } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';
import { killAll, optmark, optmarkJson, startServe, type Server } from './support.js';

const PASSWORD = 'correct horse battery staple';
let dataDir: string;
let env: Record<string, string>;
let server: Server;
let alice: WebClient;

interface Request {
  id: string;
  name: string;
  state: string;
  accountName: string;
  plan: string;
  userEmail: string;
  scopes: string[];
  grantedScopes: string[] | null;
  keyDays: number | null;
  revealBy: string | null;
  reason: string | null;
}

async function requestAccess(name: string): Promise<void> {
  const response = await alice.form('/keys/requests', { csrf: await alice.csrf(), name, purpose: 'Marks our uploads', monthlyVolume: '1000', scopes: 'protect', contact: 'alice@studio.example' });
  expect(response.status).toBe(200);
}

beforeAll(async () => {
  dataDir = freshDataDir();
  env = { OPTMARK_DATA_DIR: dataDir };
  server = await startServe(env);
  expect((await optmark(['accounts', 'create', '--name', 'studio', '--plan', 'pro'], env)).code).toBe(0);
  const { setupUrl } = await optmarkJson<{ setupUrl: string }>(['users', 'create', '--account', 'studio', '--email', 'alice@studio.example', '--role', 'member', '--json'], env);
  alice = new WebClient(server.url);
  const link = new URL(setupUrl);
  const pre = await alice.preToken(link.pathname + link.search);
  // Setting the password signs in.
  expect((await alice.form('/link', { pre, token: linkToken(setupUrl), password: PASSWORD })).status).toBe(303);
}, 60_000);
afterAll(async () => {
  await killAll();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('optmark access', () => {
  it('lists requests pending first, approves with scopes and expiry, denies with a reason', async () => {
    await requestAccess('Uploads');
    await requestAccess('Archive');
    const pending = await optmarkJson<Request[]>(['access', 'list', '--state', 'pending', '--json'], env);
    expect(pending.map((r) => r.name)).toEqual(['Uploads', 'Archive']);
    expect(pending[0]).toMatchObject({ accountName: 'studio', plan: 'pro', userEmail: 'alice@studio.example', scopes: ['protect'], state: 'pending' });
    const human = await optmark(['access', 'list'], env);
    expect(human.stdout).toContain('"Uploads"  by alice@studio.example');

    const approved = await optmarkJson<{ request: Request; mailed: boolean }>(['access', 'approve', pending[0]!.id, '--scopes', 'protect,verify', '--expires-in-days', '30', '--json'], env);
    expect(approved.request).toMatchObject({ state: 'approved', grantedScopes: ['protect', 'verify'], keyDays: 30 });
    expect(approved.mailed).toBe(false);
    const denied = await optmarkJson<{ request: Request }>(['access', 'deny', pending[1]!.id, '--reason', 'One key per account for now', '--json'], env);
    expect(denied.request).toMatchObject({ state: 'denied', reason: 'One key per account for now' });

    // A second decision: refused, with its code.
    const again = await optmark(['access', 'deny', pending[0]!.id, '--reason', 'late', '--json'], env);
    expect(again.code).toBe(1);
    expect(again.stdout + again.stderr).toContain('"code":"access_request_not_pending"');
    const unknown = await optmark(['access', 'approve', 'req_nothing', '--json'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout + unknown.stderr).toContain('"code":"access_request_not_found"');

    // The requester sees both decisions on the dashboard; the approved key, revealed, carries both scopes and its expiry.
    const page = await (await alice.request('/keys')).text();
    expect(page).toContain('One key per account for now');
    const revealed = await (await alice.form('/keys/reveal', { csrf: await alice.csrf(), request: pending[0]!.id })).text();
    const key = /value="(omk_[0-9A-Za-z]{38})"/.exec(revealed)?.[1];
    expect(key).toBeDefined();
    const keys = await optmarkJson<Array<{ prefix: string; scopes: string[]; expiresAt: string }>>(['keys', 'list', '--account', 'studio', '--json'], env);
    expect(keys).toHaveLength(1);
    expect(keys[0]!.prefix).toBe(key!.slice(0, 10));
    expect(keys[0]!.scopes).toEqual(['protect', 'verify']);
    expect(Date.parse(keys[0]!.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(server.stdout + server.stderr).not.toContain(key!.slice(10));
  });

  it('refuses bad options before anything is opened', async () => {
    for (const args of [
      ['access', 'list', '--state', 'lost'],
      ['access', 'approve', 'req_x', '--scopes', 'everything'],
      ['access', 'approve', 'req_x', '--expires-in-days', 'soon'],
      ['access', 'deny', 'req_x'],
    ]) {
      const result = await optmark(args, env);
      expect(result.code, args.join(' ')).toBe(2);
    }
    expect((await optmark(['access', '--help'], env)).stdout).toContain('optmark access approve ID');
  });
});
