/**
 * The dashboard as a browser uses it: sign in with an API key (a
 * same-origin form post), then read the page for the form token its forms
 * carry in their action.
 */

/** A signed-in session: the session cookie and the form token. */
export interface DashboardSession {
  readonly cookie: string;
  readonly formToken: string;
}

export async function signInToDashboard(url: string, key: string): Promise<DashboardSession> {
  const response = await fetch(`${url}/dashboard/sign-in`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Sec-Fetch-Site': 'same-origin' },
    body: new URLSearchParams({ key }).toString(),
    redirect: 'manual',
  });
  if (response.status !== 303) throw new Error(`the dashboard's sign-in answered ${response.status}, not 303`);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${url}/dashboard`, { headers: { Cookie: cookie } })).text();
  const formToken = /action="\/dashboard\/protect\?form=([^"]+)"/.exec(page)?.[1];
  if (!formToken) throw new Error('the signed-in dashboard page has no protect form');
  return { cookie, formToken };
}
