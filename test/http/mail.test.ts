/**
 * Mail for people, through a real SMTP server in the test (smtp-server on
 * loopback): an owner's invitation is mailed (and its link not shown on the
 * page), so is the set-up link of an account an operator opens, and "forgot
 * your password" mails a reset link whether or not anyone asked for a known
 * email, answering the same.
 */
import { rmSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { linkIn as linkInMail, startSmtp, type ReceivedMail, type TestSmtp } from '../support/smtp.js';
import { freshDataDir, startTestServer, type TestServer } from '../support/server.js';
import { linkToken, WebClient } from '../support/web-client.js';

/** The set-up or reset link in a mail. */
const linkIn = (text: string) => linkInMail(text)!;

let smtp: TestSmtp;
let received: ReceivedMail[];
let t: TestServer;
const dataDir = freshDataDir();
const PASSWORD = 'correct horse battery staple';

beforeAll(async () => {
  smtp = await startSmtp();
  received = smtp.received;
  t = await startTestServer({ dataDir, env: { OPTMARK_SMTP_URL: smtp.url, OPTMARK_MAIL_FROM: 'optmark <no-reply@studio.example>' } });
  await t.server.admin.createAccount('mailing', 'pro');
  await t.server.people.createUser({ account: 'mailing', email: 'owner@mail.example', role: 'owner', password: PASSWORD, actor: 'cli' });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
  rmSync(dataDir, { recursive: true, force: true });
});


it('an invitation is mailed to the person invited; the page says so and does not show the link', async () => {
  const owner = new WebClient(t.url);
  await owner.signIn('owner@mail.example', PASSWORD);
  const response = await owner.form('/account/members', { csrf: await owner.csrf(), email: 'new@mail.example', role: 'member' });
  const html = await response.text();
  expect(html).toContain('An invitation is mailed to new@mail.example');
  expect(html).not.toContain('id="invitation-link"');
  const mail = received.find((m) => m.to.includes('new@mail.example'))!;
  expect(mail.text).toContain('From: optmark <no-reply@studio.example>');
  expect(mail.text).toContain('invites you to mailing on optmark');
  const link = linkIn(mail.text);
  const invited = new WebClient(t.url);
  const path = new URL(link).pathname + new URL(link).search;
  const pre = await invited.preToken(path);
  expect((await invited.form('/link', { pre, token: linkToken(link), password: PASSWORD })).status).toBe(303);
});

it('"forgot your password" mails a link for a known email, nothing for an unknown one, and answers both the same', async () => {
  const known = new WebClient(t.url);
  const answerKnown = await known.form('/forgot-password', { pre: await known.preToken('/forgot-password'), email: 'owner@mail.example' });
  const unknown = new WebClient(t.url);
  const answerUnknown = await unknown.form('/forgot-password', { pre: await unknown.preToken('/forgot-password'), email: 'stranger@mail.example' });
  expect(answerKnown.status).toBe(200);
  expect(answerUnknown.status).toBe(200);
  const strip = (html: string) => html.replace(/value="[^"]*"/g, '');
  expect(strip(await answerKnown.text())).toBe(strip(await answerUnknown.text()));
  await expect.poll(() => received.filter((m) => m.to.includes('owner@mail.example')).length).toBe(1);
  expect(received.some((m) => m.to.includes('stranger@mail.example'))).toBe(false);
  const link = linkIn(received.find((m) => m.to.includes('owner@mail.example'))!.text);
  const reset = new WebClient(t.url);
  const path = new URL(link).pathname + new URL(link).search;
  expect((await reset.page(path)).html).toContain('Choose a new password');
  expect((await reset.form('/link', { pre: await reset.preToken(path), token: linkToken(link), password: 'a brand new password' })).status).toBe(303);
  expect((await new WebClient(t.url).signIn('owner@mail.example', 'a brand new password')).status).toBe(303);
});

it('an account an operator opens from the console mails its owner the set-up link, which the console does not show', async () => {
  await t.server.people.createUser({ account: 'mailing', email: 'ops@mail.example', role: 'member', operator: true, password: PASSWORD, actor: 'cli' });
  const operator = new WebClient(t.url);
  await operator.signIn('ops@mail.example', PASSWORD);
  const response = await operator.form('/operator/accounts', { csrf: await operator.csrf(), name: 'mailed-shop', plan: 'pro', email: 'boss@shop.example' });
  expect(response.status).toBe(200);
  const html = await response.text();
  expect(html).toContain('The account mailed-shop (Pro) is open; its owner boss@shop.example was sent a set-up link by mail');
  expect(html).not.toContain('id="setup-link"');
  const mail = received.find((m) => m.to.includes('boss@shop.example'))!;
  expect(mail.text).toContain('Your optmark account mailed-shop is ready');
  const link = linkIn(mail.text);
  const boss = new WebClient(t.url);
  const path = new URL(link).pathname + new URL(link).search;
  expect((await boss.form('/link', { pre: await boss.preToken(path), token: linkToken(link), password: PASSWORD })).status).toBe(303);
  expect((await t.server.people.listUsers('mailed-shop')).map((u) => [u.email, u.role])).toEqual([['boss@shop.example', 'owner']]);
});

it('a reset link the SMTP server did not take is mailed once it does, by the server started after this one stopped; no link reaches the log', { timeout: 60_000 }, async () => {
  // A port where no SMTP server listens yet: the first tries are refused.
  const away = await startSmtp();
  const port = Number(new URL(away.url).port);
  await away.close();
  const ownDir = freshDataDir();
  const env = { OPTMARK_SMTP_URL: `smtp://127.0.0.1:${port}`, OPTMARK_MAIL_RETRY_SECONDS: '1' };
  const log = new PassThrough();
  let logged = '';
  log.on('data', (chunk: Buffer) => (logged += chunk.toString('utf8')));
  let first: TestServer | undefined = await startTestServer({ dataDir: ownDir, env, logTo: log });
  let second: TestServer | undefined;
  let back: TestSmtp | undefined;
  try {
    await first.server.admin.createAccount('retried', 'pro');
    await first.server.people.createUser({ account: 'retried', email: 'late@mail.example', role: 'owner', password: PASSWORD, actor: 'cli' });
    const visitor = new WebClient(first.url);
    const answer = await visitor.form('/forgot-password', { pre: await visitor.preToken('/forgot-password'), email: 'late@mail.example' });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain('If this email belongs to a user, a link to choose a new password is on its way');
    // The first try fails (and says so), then the server stops with the mail still owed.
    await expect.poll(() => logged.includes('ECONNREFUSED'), { timeout: 20_000 }).toBe(true);
    await first.close();
    first = undefined;

    back = await startSmtp(port);
    second = await startTestServer({ dataDir: ownDir, env, logTo: log });
    await expect.poll(() => back!.received.filter((m) => m.to.includes('late@mail.example')).length, { timeout: 30_000, interval: 250 }).toBe(1);
    const link = linkIn(back.received[0]!.text);
    const reset = new WebClient(second.url);
    const path = new URL(link).pathname + new URL(link).search;
    expect((await reset.form('/link', { pre: await reset.preToken(path), token: linkToken(link), password: 'a password after the outage' })).status).toBe(303);
    expect(logged).not.toContain(linkToken(link));
    expect(logged).not.toMatch(/\/link\?/);
  } finally {
    await first?.close();
    await second?.close();
    await back?.close();
    rmSync(ownDir, { recursive: true, force: true });
  }
});
