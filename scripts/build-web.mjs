// Bundles the browser side of the people's pages: each page's TypeScript
// module (src/web/client/*.ts, with what it imports, e.g. the zip writer)
// and the stylesheet, into dist/web/assets/, minified, with source maps.
// Run by `npm run build`; no CDN: optmark serves these files itself.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const outdir = join(root, 'dist', 'web', 'assets');
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/web/client/mark.ts', 'src/web/client/check.ts', 'src/web/client/copy.ts', 'src/web/client/style.css', 'src/web/client/icon.svg'],
  loader: { '.svg': 'copy' },
  outdir,
  bundle: true,
  format: 'esm',
  target: ['chrome120', 'firefox120', 'safari17'],
  platform: 'browser',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  // The shared container and XMP code (src/core) runs here too: what it
  // asks of Node (Buffer, node:zlib, node:crypto) comes from small shims.
  alias: { 'node:zlib': './src/web/client/shims/zlib.ts', 'node:crypto': './src/web/client/shims/crypto.ts' },
  inject: ['./src/web/client/shims/buffer.ts'],
  logLevel: 'warning',
});
