/**
 * The people's side's built assets (dist/web/assets: the stylesheets and the
 * page scripts bundled from src/web/client by scripts/build-web.mjs, and the
 * licences of the API page's bundled reference renderer), read
 * once at start and served from memory, gzipped (at build time) to a
 * browser that accepts it. Their URLs carry a version from their content,
 * so browsers may keep them a year.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';

const TYPES: Readonly<Record<string, string>> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.map': 'application/json', '.svg': 'image/svg+xml', '.txt': 'text/plain; charset=utf-8' };

/** The assets directory of the build, whether this module runs from dist/ or from the sources (tests). */
function assetsDir(): string {
  const here = import.meta.dirname;
  const candidates = [join(here, '..', '..', 'web', 'assets'), join(here, '..', '..', '..', 'dist', 'web', 'assets')];
  return candidates.find((dir) => existsSync(dir)) ?? candidates[0]!;
}

export interface Assets {
  url(name: string): string;
}

interface Asset {
  readonly bytes: Buffer;
  /** The same bytes gzipped at build time (NAME.gz next to it), for a browser that accepts gzip. */
  readonly gzip: Buffer | undefined;
  readonly type: string;
  readonly version: string;
}

export function loadAssets(): Map<string, Asset> {
  const dir = assetsDir();
  const assets = new Map<string, Asset>();
  if (!existsSync(dir)) return assets;
  const names = readdirSync(dir);
  for (const name of names) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const bytes = readFileSync(join(dir, name));
    const gzip = names.includes(`${name}.gz`) ? readFileSync(join(dir, `${name}.gz`)) : undefined;
    assets.set(name, { bytes, gzip, type, version: createHash('sha256').update(bytes).digest('base64url').slice(0, 10) });
  }
  return assets;
}

/** Whether an Accept-Encoding takes gzip (named, or `*`, with a q above 0, and gzip not refused). */
export function acceptsGzip(header: string | undefined): boolean {
  const q = new Map<string, number>();
  for (const part of (header ?? '').toLowerCase().split(',')) {
    const [coding, ...parameters] = part.split(';').map((s) => s.trim());
    if (!coding) continue;
    const weight = parameters.find((p) => p.startsWith('q='));
    q.set(coding, weight ? Number(weight.slice(2)) || 0 : 1);
  }
  return (q.get('gzip') ?? q.get('*') ?? 0) > 0;
}

export function assetRoutes(app: FastifyInstance, assets: ReturnType<typeof loadAssets>): Assets {
  app.get('/assets/:name', { config: { access: 'public', anonymous: true } }, async (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    if (!asset) return reply.callNotFound();
    const versioned = (request.query as { v?: string }).v === asset.version;
    reply
      .type(asset.type)
      .header('Cache-Control', versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300')
      .header('X-Content-Type-Options', 'nosniff');
    if (!asset.gzip) return reply.send(asset.bytes);
    reply.header('Vary', 'Accept-Encoding');
    if (!acceptsGzip(request.headers['accept-encoding'])) return reply.send(asset.bytes);
    return reply.header('Content-Encoding', 'gzip').send(asset.gzip);
  });
  return {
    url(name) {
      const asset = assets.get(name);
      if (!asset) throw new Error(`internal: no built asset ${name} (run npm run build)`);
      return `/assets/${name}?v=${asset.version}`;
    },
  };
}
