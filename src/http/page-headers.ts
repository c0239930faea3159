/**
 * The headers of every HTML page the server sends (the dashboard's pages,
 * and its error pages, including those answered before the dashboard's own
 * hooks run): pages are not cached, framed, sniffed or given scripts, and
 * load nothing but their stylesheet.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};
