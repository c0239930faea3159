/**
 * Generates src/client/api-types.ts, the types of the typed client
 * (optmark/client), from the OpenAPI document with openapi-typescript; run
 * by `npm run build`, before the compiler. `--check` only compares, and
 * exits 1 when the file differs from what the document gives.
 *
 * The same function generates from a served document in
 * test/client/types.test.ts, which fails when the two drift apart.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { openApiDocument } from '../src/http/openapi.js';
import { loadConfig } from '../src/config.js';
import { clientTypes } from './client-types-source.js';

export const TYPES_FILE = fileURLToPath(new URL('../src/client/api-types.ts', import.meta.url));

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
  // The server's address is not part of the types: any will do.
  const text = await clientTypes(openApiDocument({ maxUploadBytes: loadConfig({}).maxUploadBytes, version, baseUrl: 'http://127.0.0.1:8080' }));
  let current = '';
  try {
    current = readFileSync(TYPES_FILE, 'utf8');
  } catch {
    // not generated yet
  }
  if (process.argv.includes('--check')) {
    if (current !== text) {
      process.stderr.write(`${TYPES_FILE} differs from the OpenAPI document: run npm run build\n`);
      process.exit(1);
    }
  } else if (current !== text) {
    writeFileSync(TYPES_FILE, text);
    process.stderr.write(`generated ${TYPES_FILE}\n`);
  }
}
