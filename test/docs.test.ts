/** The error documentation and the one error-to-status map hold each other. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { STATUS } from '../src/http/error-handler.js';

const errorsDoc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
const documented = new Map([...errorsDoc.matchAll(/^\| `([a-z0-9_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));

describe('docs/errors.md', () => {
  it('lists every error code with the status the server uses, and nothing else', () => {
    expect(Object.fromEntries(documented)).toEqual({ ...STATUS });
  });

  it('is what the API documentation links to', () => {
    const api = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    expect(api).toContain('(errors.md)');
    for (const code of ['missing_api_key', 'invalid_api_key', 'plan_not_allowed', 'missing_image_part', 'multiple_parts', 'empty_image', 'image_too_large', 'unsupported_content_type', 'unsupported_image_format', 'corrupt_image', 'invalid_xmp', 'ambiguous_xmp', 'quota_exceeded', 'service_unavailable', 'not_found', 'method_not_allowed']) {
      expect(api).toContain(`"code":"${code}"`);
    }
  });
});
