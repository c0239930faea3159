/**
 * Administration of the embedded database from the command line: directly
 * when no server runs, through the admin socket while `optmark serve` holds
 * the data directory; a second server on the same directory is refused; and
 * no raw API key (nor a password, a set-up link or a dashboard session's
 * tokens) is ever logged or written to the data directory.
 *
 * The tests of this file run in order on one data directory.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDataDir } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';
import { BIN, childEnv, filesUnder, KEY_PATTERN, keysIn, killAll, optmark, optmarkJson, postImage, SAMPLE_JPEG, startServe, UNKNOWN_KEY, type Server } from './support.js';

interface Issued {
  id: string;
  key: string;
  prefix: string;
}
interface KeyRow {
  id: string;
  prefix: string;
  active: boolean;
  revokedAt: string | null;
  lastUsedAt: string | null;
}
interface Usage {
  protect: { used: number; limit: number; remaining: number };
  verify: { used: number; limit: number; remaining: number };
  resetsAt: string;
}

let dataDir: string;
let env: Record<string, string>;
let server: Server | undefined;
/** Every raw key this file has seen. */
const secrets: string[] = [];

beforeAll(() => {
  dataDir = freshDataDir();
  // trace: the most the server ever logs, so the secrets check covers it all.
  env = { OPTMARK_DATA_DIR: dataDir, OPTMARK_LOG_LEVEL: 'trace' };
});
afterAll(async () => {
  await killAll();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('with no server running', () => {
  it('the admin CLI opens the embedded database itself, and unlocks it after', async () => {
    const account = await optmarkJson(['accounts', 'create', '--name', 'acme', '--plan', 'pro'], env);
    expect(account).toMatchObject({ name: 'acme', plan: 'pro', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await optmarkJson(['keys', 'list', '--account', 'acme'], env)).toEqual([]);
    const usage = await optmarkJson<Usage>(['usage', '--account', 'acme'], env);
    expect(usage.protect).toEqual({ used: 0, limit: 10000, remaining: 10000 });
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);

    const duplicate = await optmark(['accounts', 'create', '--name', 'acme', '--plan', 'pro', '--json'], env);
    expect(duplicate.code).toBe(1);
    expect(JSON.parse(duplicate.stdout)).toMatchObject({ code: 'account_exists' });
  });
});

describe('while optmark serve holds the data directory', () => {
  it('serves without printing a key (the database already has an account); admin.sock is 0600', async () => {
    server = await startServe(env);
    expect(server.stderr).not.toMatch(KEY_PATTERN);
    const socket = statSync(join(dataDir, 'admin.sock'));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(Number(readFileSync(join(dataDir, 'optmark.lock'), 'utf8'))).toBe(server.pid);
  });

  it('issues, lists, meters and revokes keys through the admin socket; a revoked key gets 401 at once', async () => {
    const issued = await optmarkJson<Issued>(['keys', 'issue', '--account', 'acme'], env);
    secrets.push(issued.key);
    expect(Object.keys(issued).sort()).toEqual(['id', 'key', 'prefix']);
    expect(issued.key).toMatch(/^omk_[0-9A-Za-z]{38}$/);
    expect(issued.key.startsWith(issued.prefix)).toBe(true);
    expect(issued.id).toMatch(/^key_/);

    const listed = await optmarkJson<KeyRow[]>(['keys', 'list', '--account', 'acme'], env);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: issued.id, prefix: issued.prefix, active: true, revokedAt: null });
    expect(JSON.stringify(listed)).not.toContain(issued.key);

    expect((await postImage(server!.url, issued.key)).status).toBe(200);
    const usage = await optmarkJson<Usage>(['usage', '--account', 'acme'], env);
    expect(usage.protect).toEqual({ used: 1, limit: 10000, remaining: 9999 });
    expect(usage.verify.used).toBe(0);

    const revoked = await optmark(['keys', 'revoke', issued.id], env);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`Revoked ${issued.id}`);
    const after = await postImage(server!.url, issued.key);
    expect(after.status).toBe(401);
    expect(await after.json()).toMatchObject({ code: 'invalid_api_key' });
    const relisted = await optmarkJson<KeyRow[]>(['keys', 'list', '--account', 'acme'], env);
    expect(relisted[0]).toMatchObject({ id: issued.id, active: false, revokedAt: expect.any(String) });
    expect((await optmarkJson<Usage>(['usage', '--account', 'acme'], env)).protect.used).toBe(1);

    // The server's own errors come back through the socket too.
    const missing = await optmark(['keys', 'issue', '--account', 'nobody', '--json'], env);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ code: 'account_not_found' });
  });

  it('accounts list|show|set-plan|set-limits|rename and plans list|set, through the admin socket: the running server enforces the change at once', async () => {
    const issued = await optmarkJson<Issued>(['keys', 'issue', '--account', 'acme'], env);
    secrets.push(issued.key);
    await optmarkJson(['accounts', 'create', '--name', 'beta', '--plan', 'free'], env);
    const listed = await optmarkJson<Array<{ name: string; plan: string; limits: Record<string, number> }>>(['accounts', 'list'], env);
    expect(listed.map((a) => [a.name, a.plan, a.limits.protectPerMonth])).toEqual([
      ['acme', 'pro', 10000],
      ['beta', 'free', 0],
    ]);

    const limited = await optmarkJson<{ limits: Record<string, number>; overrides: Record<string, number | null> }>(['accounts', 'set-limits', 'acme', '--protect', '2'], env);
    expect(limited.overrides.protectPerMonth).toBe(2);
    // One protect already counted this month (above): one more, then 429.
    expect((await postImage(server!.url, issued.key)).status).toBe(200);
    expect((await postImage(server!.url, issued.key)).status).toBe(429);
    const text = await optmark(['accounts', 'show', 'acme'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('protect 2/month*');
    expect(text.stdout).toContain('this month: protect 2 used');
    await optmarkJson(['accounts', 'set-limits', 'acme', '--protect', 'plan'], env);
    expect((await postImage(server!.url, issued.key)).status).toBe(200);

    const plans = await optmarkJson<Record<string, Record<string, number>>>(['plans', 'set', 'pro', '--verify', '9'], env);
    expect(plans.pro!.verifyPerMonth).toBe(9);
    expect((await optmarkJson<Record<string, Record<string, number>>>(['plans', 'list'], env)).lifetime!.verifyPerMonth).toBe(50000);
    expect((await optmarkJson<Usage>(['usage', '--account', 'acme'], env)).verify.limit).toBe(9);
    await optmarkJson(['plans', 'set', 'pro', '--verify', '50000'], env);

    expect(await optmarkJson(['accounts', 'set-plan', 'beta', 'pro'], env)).toMatchObject({ name: 'beta', plan: 'pro' });
    expect(await optmarkJson(['accounts', 'rename', 'beta', 'gamma'], env)).toMatchObject({ name: 'gamma', plan: 'pro' });

    const bad = await optmark(['accounts', 'set-limits', 'acme', '--protect', 'lots'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--protect takes a whole number or "plan"');
    const none = await optmark(['plans', 'set', 'pro'], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give at least one of --protect');
    await optmark(['keys', 'revoke', issued.id], env);
  });

  it('users create --password-stdin --operator, users disable and reset, scans pause and resume: each as documented, through the admin socket', async () => {
    // An account of its own, so that the other tests' counts of acme's users and keys stay as they are.
    expect((await optmark(['accounts', 'create', '--name', 'opsco', '--plan', 'pro'], env)).code).toBe(0);
    const made = spawnSync(process.execPath, [BIN, 'users', 'create', '--account', 'opsco', '--email', 'ops@acme.example', '--role', 'member', '--operator', '--password-stdin', '--json'], {
      input: 'correct horse battery staple\n',
      env: childEnv(env),
      encoding: 'utf8',
    });
    expect(made.status, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ email: 'ops@acme.example', role: 'member', setupUrl: null });
    const users = await optmarkJson<Array<{ email: string; operator: boolean; hasPassword: boolean; disabledAt: string | null }>>(['users', 'list', '--account', 'opsco'], env);
    expect(users.find((u) => u.email === 'ops@acme.example')).toMatchObject({ operator: true, hasPassword: true, disabledAt: null });
    const issued = await optmarkJson<{ id: string }>(['keys', 'issue', '--account', 'opsco', '--user', 'ops@acme.example'], env);
    const reset = await optmarkJson<{ email: string; resetUrl: string }>(['users', 'reset', 'ops@acme.example'], env);
    expect(reset).toMatchObject({ email: 'ops@acme.example', resetUrl: expect.stringMatching(/\/link\?token=[A-Za-z0-9_-]{43}$/) });
    const disabled = await optmark(['users', 'disable', 'ops@acme.example'], env);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toContain('their API keys are revoked');
    expect((await optmarkJson<KeyRow[]>(['keys', 'list', '--account', 'opsco'], env)).find((k) => k.id === issued.id)).toMatchObject({ active: false, revokedAt: expect.any(String) });
    expect((await optmarkJson<{ paused: boolean }>(['scans', 'pause'], env)).paused).toBe(true);
    expect((await optmarkJson<{ paused: boolean }>(['scans', 'status'], env)).paused).toBe(true);
    expect((await optmarkJson<{ paused: boolean }>(['scans', 'resume'], env)).paused).toBe(false);
  });

  it('a second optmark serve on the same data directory fails fast, saying the directory is in use', async () => {
    const started = Date.now();
    const second = await optmark(['serve'], { ...env, PORT: '0' }, 20_000);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(second.code).not.toBe(0);
    expect(second.code).not.toBeNull();
    expect(second.stderr).toContain(`the data directory ${dataDir} is in use by process ${server!.pid}`);
    // The first server is untouched: still serving, still holding the lock and its socket.
    expect(server!.running).toBe(true);
    expect((await fetch(`${server!.url}/readyz`)).status).toBe(200);
    expect(Number(readFileSync(join(dataDir, 'optmark.lock'), 'utf8'))).toBe(server!.pid);
    expect((await optmarkJson<Usage>(['usage', '--account', 'acme'], env)).protect.used).toBe(3);
  });

  it('no raw key in the server logs or in any file of the data directory', async () => {
    const issued = await optmarkJson<Issued>(['keys', 'issue', '--account', 'acme'], env);
    secrets.push(issued.key);
    const url = server!.url;
    expect((await postImage(url, issued.key)).status).toBe(200);
    expect((await postImage(url, issued.key, undefined, '/api/v1/verify')).status).toBe(200);
    expect((await fetch(`${url}/api/v1/usage`, { headers: { Authorization: `Bearer ${issued.key}` } })).status).toBe(200);
    // Bad ones: a mistyped key (bad checksum), an unknown well-formed key, the revoked key, a bad scheme.
    const typo = issued.key.slice(0, -1) + (issued.key.endsWith('A') ? 'B' : 'A');
    secrets.push(typo);
    expect((await postImage(url, typo)).status).toBe(401);
    expect((await postImage(url, UNKNOWN_KEY)).status).toBe(401);
    expect((await postImage(url, secrets[0])).status).toBe(401);
    const basic = await fetch(`${url}/api/v1/usage`, { headers: { Authorization: `Basic ${issued.key}` } });
    expect(basic.status).toBe(401);
    // The dashboard: a person made with the CLI, whose set-up link, password, session token and form token are secrets too.
    const created = await optmarkJson<{ id: string; email: string; account: string; role: string; setupUrl: string }>(
      ['users', 'create', '--account', 'acme', '--email', 'Ada@Example.com', '--role', 'owner'],
      env,
    );
    expect(Object.keys(created).sort()).toEqual(['account', 'email', 'id', 'role', 'setupUrl']);
    expect(created).toMatchObject({ email: 'ada@example.com', account: 'acme', role: 'owner' });
    const browser = new WebClient(url);
    const link = new URL(created.setupUrl);
    expect(link.origin).toBe(url);
    const pre = await browser.preToken(link.pathname + link.search);
    const password = 'correct horse battery staple';
    secrets.push(linkToken(created.setupUrl), pre, password);
    expect((await browser.form('/link', { pre, token: linkToken(created.setupUrl), password })).status).toBe(303);
    secrets.push(browser.cookie('optmark_session')!);
    const formToken = await browser.csrf();
    secrets.push(formToken);
    const listed = await optmarkJson<Array<{ email: string; hasPassword: boolean; role: string }>>(['users', 'list', '--account', 'acme'], env);
    expect(listed).toMatchObject([{ email: 'ada@example.com', hasPassword: true, role: 'owner' }]);
    const form = new FormData();
    form.append('image', new Blob([SAMPLE_JPEG], { type: 'image/jpeg' }), 'photo.jpg');
    expect((await browser.upload('/mark', form, formToken)).status).toBe(200);

    // The stop flushes the database to its files; then the lock and the socket are gone.
    expect(await server!.stop()).toEqual({ code: 0, signal: null });
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'admin.sock'))).toBe(false);

    const logs = server!.stdout + server!.stderr;
    expect(logs).toContain('incoming request'); // the logs are there, and at trace level
    const files = filesUnder(dataDir);
    expect(files.length).toBeGreaterThan(100);
    const contents = files.map((file) => [file, readFileSync(file)] as const);
    const leaks: string[] = [];
    for (const secret of secrets) {
      // The whole key, and its secret part (the part after the prefix listings show).
      for (const needle of [secret, secret.slice(10)]) {
        for (const line of logs.split('\n')) if (line.includes(needle)) leaks.push(`log: ${line}`);
        for (const [file, bytes] of contents) if (bytes.includes(needle, 0, 'latin1')) leaks.push(`file: ${file}`);
      }
    }
    expect(leaks).toEqual([]);
    expect(keysIn(logs)).toEqual([]);
  });
});

describe('after the server stopped', () => {
  it('the admin CLI works on the data directory again by itself', async () => {
    const usage = await optmarkJson<Usage>(['usage', '--account', 'acme'], env);
    // Four API calls (one refused at its limit) and one dashboard call returned 200.
    expect(usage.protect.used).toBe(5);
    expect(usage.verify.used).toBe(1);
    const keys = await optmarkJson<KeyRow[]>(['keys', 'list', '--account', 'acme'], env);
    expect(keys.map((k) => k.active)).toEqual([false, false, true]);
    expect(keys[2]!.lastUsedAt).toEqual(expect.any(String));
    expect(existsSync(join(dataDir, 'optmark.lock'))).toBe(false);
  });
});
