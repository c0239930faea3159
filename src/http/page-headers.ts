/**
 * The headers of every HTML page the server sends (the dashboard's pages,
 * and its error pages, including those answered before the dashboard's own
 * hooks run): pages are not cached, framed or sniffed, and load nothing but
 * this site's stylesheet, scripts and images.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' blob: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};
