/**
 * The people's side's built assets (dist/web/assets: the stylesheet and the
 * page scripts bundled from src/web/client by scripts/build-web.mjs), read
 * once at start and served from memory. Their URLs carry a version from
 * their content, so browsers may keep them a year.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';

const TYPES: Readonly<Record<string, string>> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.map': 'application/json', '.svg': 'image/svg+xml' };

/** The assets directory of the build, whether this module runs from dist/ or from the sources (tests). */
function assetsDir(): string {
  const here = import.meta.dirname;
  const candidates = [join(here, '..', '..', 'web', 'assets'), join(here, '..', '..', '..', 'dist', 'web', 'assets')];
  return candidates.find((dir) => existsSync(dir)) ?? candidates[0]!;
}

export interface Assets {
  url(name: string): string;
}

export function loadAssets(): Map<string, { bytes: Buffer; type: string; version: string }> {
  const dir = assetsDir();
  const assets = new Map<string, { bytes: Buffer; type: string; version: string }>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const bytes = readFileSync(join(dir, name));
    assets.set(name, { bytes, type, version: createHash('sha256').update(bytes).digest('base64url').slice(0, 10) });
  }
  return assets;
}

export function assetRoutes(app: FastifyInstance, assets: ReturnType<typeof loadAssets>): Assets {
  app.get('/assets/:name', { config: { access: 'public', anonymous: true } }, async (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    if (!asset) return reply.callNotFound();
    const versioned = (request.query as { v?: string }).v === asset.version;
    return reply
      .type(asset.type)
      .header('Cache-Control', versioned ? 'public, max-age=31536000, immutable' : 'public, max-age=300')
      .header('X-Content-Type-Options', 'nosniff')
      .send(asset.bytes);
  });
  return {
    url(name) {
      const asset = assets.get(name);
      if (!asset) throw new Error(`internal: no built asset ${name} (run npm run build)`);
      return `/assets/${name}?v=${asset.version}`;
    },
  };
}
