/**
 * A person's browser, over plain HTTP: a cookie jar, the tokens pages carry
 * (the pre-session token of sign-in forms, the session's form token), and
 * the headers a browser sends with a form of this site (Sec-Fetch-Site).
 */
export class WebClient {
  private readonly cookies = new Map<string, string>();

  /** `headers`: sent with every request (say, X-Forwarded-For of a client behind a trusted proxy). */
  constructor(
    readonly base: string,
    private readonly headers: Record<string, string> = {},
  ) {}

  get cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  private keep(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(path: string, init: RequestInit & { site?: 'same-origin' | 'cross-site' | 'none' } = {}): Promise<Response> {
    const headers = new Headers({ ...this.headers, ...Object.fromEntries(new Headers(init.headers)) });
    if (this.cookies.size > 0) headers.set('Cookie', this.cookieHeader);
    if (init.site) headers.set('Sec-Fetch-Site', init.site);
    const response = await fetch(`${this.base}${path}`, { ...init, headers, redirect: 'manual' });
    this.keep(response);
    return response;
  }

  async page(path: string): Promise<{ status: number; html: string; location: string | null }> {
    const response = await this.request(path, { site: 'none' });
    return { status: response.status, html: await response.text(), location: response.headers.get('location') };
  }

  /** POST a url-encoded form as a browser does from this site's page. */
  form(path: string, fields: Record<string, string>, site: 'same-origin' | 'cross-site' = 'same-origin'): Promise<Response> {
    return this.request(path, { method: 'POST', site, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  }

  /** The sign-in form's pre-session token (and its cookie) for a form of `path`. */
  async preToken(path = '/sign-in'): Promise<string> {
    const { html } = await this.page(path);
    const match = /name="pre" value="([^"]+)"/.exec(html);
    if (!match) throw new Error(`no pre-session token on ${path}`);
    return match[1]!;
  }

  async signIn(email: string, password: string): Promise<Response> {
    const pre = await this.preToken();
    return this.form('/sign-in', { pre, email, password });
  }

  /** A pre-session token for a form, even while signed in (when /sign-in sends the person on): one of a fresh browser's, cookie and all. */
  async preTokenAnyway(): Promise<string> {
    const fresh = new WebClient(this.base, this.headers);
    const pre = await fresh.preToken();
    this.cookies.set('optmark_pre', fresh.cookie('optmark_pre')!);
    return pre;
  }

  /** The session's form token, as every signed-in page carries it. */
  async csrf(): Promise<string> {
    const { html } = await this.page('/overview');
    const match = /<meta name="csrf-token" content="([^"]+)">/.exec(html);
    if (!match) throw new Error('not signed in: no form token on /overview');
    return match[1]!;
  }

  /**
   * An upload form sent without JavaScript (/mark, /check): the form token
   * goes first in the body, as the page's hidden field puts it, then the
   * form's own parts.
   */
  async upload(path: string, form: FormData, csrf?: string): Promise<Response> {
    const body = new FormData();
    body.append('csrf', csrf ?? (await this.csrf()));
    for (const [name, value] of form) body.append(name, value);
    return this.request(path, { method: 'POST', site: 'same-origin', body });
  }

  /**
   * A page script's call, with the form token in X-CSRF-Token: its JSON; or,
   * for a marking (whose body is the marked file), what the Optmark-Result
   * header says and the file's bytes.
   */
  async app(path: string, init: { method?: string; body?: FormData; headers?: Record<string, string>; csrf?: string } = {}): Promise<{ status: number; json: Record<string, unknown>; bytes?: Buffer }> {
    const csrf = init.csrf ?? (await this.csrf());
    const response = await this.request(path, {
      method: init.method ?? 'POST',
      site: 'same-origin',
      headers: { 'X-CSRF-Token': csrf, Accept: 'application/json', ...init.headers },
      ...(init.body ? { body: init.body } : {}),
    });
    const result = response.headers.get('optmark-result');
    if (response.status === 200 && result !== null) {
      return { status: response.status, json: JSON.parse(decodeURIComponent(result)) as Record<string, unknown>, bytes: Buffer.from(await response.arrayBuffer()) };
    }
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }
}

export function linkToken(url: string): string {
  return new URL(url).searchParams.get('token')!;
}
