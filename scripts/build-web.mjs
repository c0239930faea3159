// Bundles the browser side of the people's pages: each page's TypeScript
// module (src/web/client/*.ts, with what it imports, e.g. the zip writer)
// and the stylesheet, into dist/web/assets/, minified, with source maps;
// and the API page's reference renderer, with its stylesheet and licences.
// Run by `npm run build`; no CDN: optmark serves these files itself.
import { build } from 'esbuild';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, join } from 'node:path';
import { constants, gzipSync } from 'node:zlib';

const root = join(import.meta.dirname, '..');
const outdir = join(root, 'dist', 'web', 'assets');
rmSync(outdir, { recursive: true, force: true });
const common = {
  absWorkingDir: root,
  outdir,
  bundle: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  platform: 'browser',
  minify: true,
  logLevel: 'warning',
};
await build({
  ...common,
  entryPoints: ['src/web/client/mark.ts', 'src/web/client/check.ts', 'src/web/client/copy.ts', 'src/web/client/scan.ts', 'src/web/client/fix.ts', 'src/web/client/vault.ts', 'src/web/client/style.css', 'src/web/client/icon.svg'],
  loader: { '.svg': 'copy' },
  sourcemap: 'linked',
  legalComments: 'none',
  // The shared container and XMP code (src/core) runs here too: what it
  // asks of Node (Buffer, node:zlib, node:crypto) comes from small shims.
  alias: { 'node:zlib': './src/web/client/shims/zlib.ts', 'node:crypto': './src/web/client/shims/crypto.ts' },
  inject: ['./src/web/client/shims/buffer.ts'],
});

// The API page's interactive reference: Swagger UI's prebuilt bundle
// (swagger-ui-dist) with the page's few lines that mount it, and its
// stylesheet with the page's own rules. Built on its own: no shims (the
// bundle brings what it needs), and no source map (the bundle is already
// minified; a map of it would be megabytes held in memory by the server for
// nobody). Its licences, and those of the libraries it bundles, are served
// next to it, and the bundle names that file.
const swagger = join(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'), '..');
const licences = 'api-reference.licenses.txt';
await build({
  ...common,
  entryPoints: ['src/web/client/api-reference.ts', 'src/web/client/api-reference.css'],
  sourcemap: false,
  legalComments: 'none',
  banner: { js: `/*! Swagger UI (Apache-2.0) and the libraries it bundles: see ${licences} */`, css: `/*! Swagger UI (Apache-2.0): see ${licences} */` },
});
writeFileSync(
  join(outdir, licences),
  [
    `The API reference of this page is rendered by Swagger UI ${JSON.parse(readFileSync(join(swagger, 'package.json'), 'utf8')).version}, bundled unmodified from the npm package swagger-ui-dist.`,
    readFileSync(join(swagger, 'NOTICE'), 'utf8'),
    readFileSync(join(swagger, 'LICENSE'), 'utf8'),
    'The libraries Swagger UI bundles, with their licences:',
    readFileSync(join(swagger, 'swagger-ui-es-bundle.js.LICENSE.txt'), 'utf8'),
  ].join('\n\n'),
);

// Each script and stylesheet also gzipped once, here, at the highest level:
// the server sends that copy to a browser that accepts gzip (every browser
// does), so the reference's 1.6 MB bundle travels as about 450 KB, without
// compressing anything per request.
for (const name of readdirSync(outdir)) {
  if (!['.js', '.css'].includes(extname(name))) continue;
  writeFileSync(join(outdir, `${name}.gz`), gzipSync(readFileSync(join(outdir, name)), { level: constants.Z_BEST_COMPRESSION }));
}
