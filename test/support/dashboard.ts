/**
 * The dashboard as a browser uses it: a person of the account (made here,
 * with a password) signs in with the sign-in form, and the session's form
 * token is read from a page, as the page's own forms carry it.
 */
import type { TestServer } from './server.js';
import { WebClient } from './web-client.js';

/** A signed-in session: the session cookie and the form token. */
export interface DashboardSession {
  readonly cookie: string;
  readonly formToken: string;
  readonly browser: WebClient;
}

let people = 0;

/** Sign a new owner of `account` in (the account is created on the Pro plan when it does not exist). */
export async function signInToDashboard(t: Pick<TestServer, 'url' | 'server'>, account = `dash-${process.pid}-${++people}`): Promise<DashboardSession> {
  await t.server.admin.createAccount(account, 'pro').catch((error: { code?: string }) => {
    if (error.code !== 'account_exists') throw error;
  });
  const email = `person-${process.pid}-${++people}@dashboard.example`;
  const password = 'correct horse battery staple';
  await t.server.people.createUser({ account, email, role: 'owner', password, actor: 'cli' });
  const browser = new WebClient(t.url);
  const response = await browser.signIn(email, password);
  if (response.status !== 303) throw new Error(`the sign-in answered ${response.status}, not 303`);
  return { cookie: browser.cookieHeader, formToken: await browser.csrf(), browser };
}
