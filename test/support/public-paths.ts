/**
 * Every path the public API serves, as the OpenAPI document must list them
 * (sorted): the API test reads them from the served document, the OpenAPI
 * test from the document it validates answers against.
 */
export const PUBLIC_API_PATHS: readonly string[] = [
  '/.well-known/jwks.json',
  '/api/v1/openapi.json',
  '/api/v1/protect',
  '/api/v1/records/{sha256}',
  '/api/v1/scans',
  '/api/v1/scans/{id}',
  '/api/v1/scans/{id}/fix',
  '/api/v1/scans/{id}/report',
  '/api/v1/usage',
  '/api/v1/verify',
  '/healthz',
  '/readyz',
];
