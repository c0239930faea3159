/**
 * The first-start file (DESIGN §6 "First-start secrets") holds the `local`
 * account's API key and its owner's set-up link, and is removed when that
 * owner sets a password: with the set-up link, also after a restart (the
 * process that wrote the file is gone), or with a reset link made because
 * the set-up link was lost (which retires it). Using another person's link
 * leaves it in place.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery staple';
const dirs: string[] = [];
const servers: TestServer[] = [];
afterAll(async () => {
  for (const t of servers) await t.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function started(dataDir: string): Promise<TestServer> {
  const t = await startTestServer({ dataDir });
  servers.push(t);
  return t;
}

/** Set a password through a one-time link, as the person does in the browser. */
async function useLink(t: TestServer, link: string): Promise<number> {
  const browser = new WebClient(t.url);
  const path = link.slice(link.indexOf('/link'));
  const pre = await browser.preToken(path);
  return (await browser.form('/link', { pre, token: linkToken(link), password: PASSWORD })).status;
}

const setupLinkIn = (file: string) => /https?:\/\/\S+\/link\?token=[A-Za-z0-9_-]{43}/.exec(readFileSync(file, 'utf8'))![0];

it('the set-up link used after a restart removes the file; another person\'s link before it does not', async () => {
  const dataDir = freshDataDir();
  dirs.push(dataDir);
  const first = await started(dataDir);
  const file = join(dataDir, 'first-start.txt');
  expect(first.server.firstStart).toMatchObject({ path: file });
  const link = setupLinkIn(file);
  await first.close();

  const second = await started(dataDir);
  expect(second.server.firstStart).toBeUndefined();
  // A member of the account sets their own password: the owner's file stays.
  const { link: memberLink } = await second.server.people.createUser({ account: 'local', email: 'member@localhost', role: 'member', actor: 'cli' });
  expect(await useLink(second, memberLink!.url)).toBe(303);
  expect(existsSync(file)).toBe(true);

  expect(await useLink(second, link)).toBe(303);
  expect(existsSync(file)).toBe(false);
});

it('a reset link the owner uses instead of the lost set-up link removes the file too', async () => {
  const dataDir = freshDataDir();
  dirs.push(dataDir);
  const t = await started(dataDir);
  const file = join(dataDir, 'first-start.txt');
  expect(existsSync(file)).toBe(true);
  const reset = await t.server.people.resetUser('owner@localhost', 'cli');
  expect(await useLink(t, reset.url)).toBe(303);
  expect(existsSync(file)).toBe(false);
});
