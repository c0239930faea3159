/**
 * The client's types are the served document's: generating them again from
 * GET /api/v1/openapi.json gives src/client/api-types.ts exactly. And a
 * client an integrator generates from the served document with
 * openapi-typescript and openapi-fetch compiles (TypeScript, strict) and
 * protects a file: the image is a Blob, sent as a file part.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientTypes } from '../../scripts/client-types-source.js';
import { TYPES_FILE } from '../../scripts/client-types.js';
import { verify } from '../../src/index.js';
import { SAMPLE_JPEG } from '../process/support.js';
import { startTestServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

describe('the client\'s types', () => {
  let t: TestServer;
  let doc: unknown;
  let dir: string;

  beforeAll(async () => {
    t = await startTestServer();
    doc = await (await fetch(`${t.url}/api/v1/openapi.json`)).json();
    // Inside the repository, so that the program finds openapi-fetch in node_modules.
    mkdirSync(join(ROOT, 'test-output'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'test-output', 'openapi-client-'));
  });
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('are what openapi-typescript makes of the served document', async () => {
    expect(await clientTypes(doc)).toBe(readFileSync(TYPES_FILE, 'utf8'));
  });

  it('an integrator\'s openapi-typescript + openapi-fetch client compiles and protects a file', async () => {
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
    // openapi-typescript's own recipe for file uploads: binary parts as Blob.
    writeFileSync(join(dir, 'api.d.ts'), await clientTypes(doc));
    writeFileSync(
      join(dir, 'protect.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './api.d.ts';
import { readFileSync } from 'node:fs';

const client = createClient<paths>({ baseUrl: process.env.BASE_URL!, headers: { Authorization: \`Bearer \${process.env.KEY}\` } });
const image: Blob = new Blob([readFileSync(process.argv[2]!)]);
const { data, error, response } = await client.POST('/api/v1/protect', {
  body: { image },
  bodySerializer(body) {
    const form = new FormData();
    form.append('image', body.image, 'photo.jpg');
    return form;
  },
});
if (error) throw new Error(\`\${response.status} \${error.code}: \${error.error}\`);
const optOut: string | undefined = response.headers.get('Optmark-Opt-Out') ?? undefined;
const marked: { filename: string; mimeType: 'image/jpeg' | 'image/png' | 'image/webp'; imageBase64: string } = data;
process.stdout.write(JSON.stringify({ filename: marked.filename, mimeType: marked.mimeType, imageBase64: marked.imageBase64, optOut }));
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2024', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, types: ['node'], lib: ['ES2024', 'DOM'], skipLibCheck: true },
        files: ['protect.ts'],
      }),
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir]).catch((error: { stdout: string }) => {
      throw new Error(`the generated client does not compile:\n${error.stdout}`);
    });
    writeFileSync(join(dir, 'photo.jpg'), SAMPLE_JPEG);
    const { stdout } = await run(process.execPath, [join(dir, 'protect.ts'), join(dir, 'photo.jpg')], { env: { ...process.env, BASE_URL: t.url, KEY: await t.key('pro') } });
    const answer = JSON.parse(stdout) as { filename: string; mimeType: string; imageBase64: string; optOut: string };
    expect(answer).toMatchObject({ filename: 'photo-optout.jpg', mimeType: 'image/jpeg', optOut: 'written DMI-PROHIBITED-AIMLTRAINING' });
    expect(verify(Buffer.from(answer.imageBase64, 'base64')).optedOut).toBe(true);
  });
});
