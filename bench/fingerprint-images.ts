/**
 * Pictures for the fingerprint benchmark.
 *
 * Natural photos come from Debian packages installed at benchmark time
 * (never committed: CC-BY/CC-BY-SA/GPL attribution duties and ~200 MB),
 * selected by an allow-list of file names. Graphics, the hard negatives
 * with little texture, are drawn in code.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { random } from '../test/support/random.js';

const PHOTO_PACKAGES = ['lomiri-wallpapers-16.04', 'lomiri-wallpapers-20.04', 'mate-backgrounds', 'plasma-workspace-wallpapers', 'python-matplotlib-data'];

const LOMIRI = '/usr/share/backgrounds';
const LOMIRI_PHOTOS = [
  'Bridge_by_Sander_Klootwijk', 'Dragonfly_by_Bolly', 'Picture_0B_by_freespace', 'Picture_1A_by_freespace', 'Wine_by_Jakkub_Mede',
  'aitzgorri_by_Aitzol_Berasategi', 'analogpattern_by_Peter_Nerlich', 'free_by_Peter_Nerlich', 'friends_by_Aitzol_Berasategi',
  'greentock_by_Peter_Nerlich', 'life_by_Aitzol_Berasategi', 'picosdeeuropa_by_Aitzol_Berasategi', 'seeding_by_Clements_Engelhardt',
  'sunset_by_Aitzol_Berasategi', 'umang_by_Abhishek_Mudgal', 'Kleiber_by_Lukas_Baubkus',
];
const MATE = '/usr/share/backgrounds/mate/nature';
const MATE_PHOTOS = ['Aqua', 'Blinds', 'Dune', 'FreshFlower', 'Garden', 'GreenMeadow', 'LadyBird', 'RainDrops', 'Storm', 'TwoWings', 'Wood', 'YellowFlower'];
const PLASMA = '/usr/share/wallpapers';
const PLASMA_PHOTOS = ['BytheWater', 'ColdRipple', 'ColorfulCups', 'DarkestHour', 'EveningGlow', 'FallenLeaf', 'Grey', 'Kite', 'OneStandsOut', 'Path', 'Volna', 'summer_1am'];
const MATPLOTLIB = '/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg';

export interface PhotoFile {
  readonly name: string;
  readonly path: string;
}

/** The allow-listed photos that are on this machine. */
function photoFiles(): PhotoFile[] {
  const files: PhotoFile[] = [];
  for (const name of LOMIRI_PHOTOS) files.push({ name, path: join(LOMIRI, `${name}.jpg`) });
  for (const name of MATE_PHOTOS) files.push({ name, path: join(MATE, `${name}.jpg`) });
  for (const name of PLASMA_PHOTOS) {
    const dir = join(PLASMA, name, 'contents', 'images');
    if (!existsSync(dir)) continue;
    // The largest image of the theme; some sizes are empty placeholders.
    const largest = readdirSync(dir)
      .filter((f) => /\.(jpe?g|png)$/i.test(f))
      .map((f) => ({ f, size: statSync(join(dir, f)).size, pixels: f.match(/^(\d+)x(\d+)/)?.slice(1).reduce((a, b) => a * Number(b), 1) ?? 0 }))
      .filter((c) => c.size > 0)
      .sort((a, b) => b.pixels - a.pixels)[0];
    if (largest) files.push({ name, path: join(dir, largest.f) });
  }
  files.push({ name: 'grace_hopper', path: MATPLOTLIB });
  return files.filter((f) => existsSync(f.path) && statSync(f.path).size > 0);
}

/** Installs the photo packages when photos are missing (needs root, as on CI). */
export function ensurePhotos(log: (line: string) => void): PhotoFile[] {
  let files = photoFiles();
  if (files.length >= 40) return files;
  log(`only ${files.length} photos found; installing ${PHOTO_PACKAGES.join(' ')} ...`);
  try {
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...PHOTO_PACKAGES], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch {
    execFileSync('apt-get', ['update'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...PHOTO_PACKAGES], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  files = photoFiles();
  if (files.length === 0) throw new Error(`no photos after installing ${PHOTO_PACKAGES.join(' ')}`);
  return files;
}

export interface RgbImage {
  readonly name: string;
  readonly data: Uint8Array;
  readonly width: number;
  readonly height: number;
}


/**
 * Graphics: flat colour fields, UI-like panels with text lines, charts,
 * gradients, stripes and checkerboards, logos on flat backgrounds, and a
 * few with a little noise: the images with the least capacity and the most
 * structure (periodic ones included), i.e. where a broken null model would
 * show first.
 */
export function graphics(count: number): RgbImage[] {
  const out: RgbImage[] = [];
  for (let n = 0; n < count; n++) {
    const rnd = random(1000 + n);
    const width = [1280, 1024, 800, 1600, 640][n % 5]!;
    const height = [720, 768, 600, 1000, 480][n % 5]!;
    const data = new Uint8Array(width * height * 3);
    const kind = n % 8;
    const colour = () => [rnd() * 255, rnd() * 255, rnd() * 255];
    const bg = colour();
    const boxes = Array.from({ length: 6 + Math.floor(rnd() * 20) }, () => ({ x: rnd() * width, y: rnd() * height, w: 20 + rnd() * width * 0.4, h: 10 + rnd() * height * 0.3, c: colour() }));
    const period = 2 + Math.floor(rnd() * 14);
    const noise = kind === 7 ? 3 : 0;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let c = bg;
        switch (kind) {
          case 0: // flat field
            break;
          case 1: // panels with text lines
            for (const b of boxes) if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + b.h) c = b.c;
            if (y % 18 < 9 && x % 120 < 100 && ((x >> 2) * 31 + (y >> 4) * 17) % 7 < 4 && y > 40) c = [30, 30, 30];
            break;
          case 2: // bar chart with axes and grid
            if (x % 100 === 0 || y % 80 === 0) c = [200, 200, 200];
            if (y > height - 60 - ((Math.floor(x / 60) * 7919) % (height - 120)) && x % 60 < 40) c = boxes[Math.floor(x / 60) % boxes.length]!.c;
            break;
          case 3: // linear gradient
            c = [bg[0]! * (x / width), bg[1]! * (y / height), 128];
            break;
          case 4: // stripes
            c = Math.floor(x / period) % 2 ? bg : [255 - bg[0]!, 255 - bg[1]!, 255 - bg[2]!];
            break;
          case 5: // checkerboard
            c = (Math.floor(x / period) + Math.floor(y / period)) % 2 ? bg : [20, 20, 20];
            break;
          case 6: // logo: discs on a flat field
            for (const b of boxes.slice(0, 4)) if ((x - b.x) ** 2 + (y - b.y) ** 2 < (b.h * 1.5) ** 2) c = b.c;
            break;
          case 7: // soft gradient with a little noise
            c = [bg[0]! + 40 * Math.sin(x / 200), bg[1]! + 40 * Math.cos(y / 150), bg[2]!];
            break;
        }
        const p = (y * width + x) * 3;
        for (let k = 0; k < 3; k++) data[p + k] = Math.max(0, Math.min(255, Math.round(c[k]! + (noise ? (rnd() - 0.5) * 2 * noise : 0))));
      }
    }
    out.push({ name: `graphic-${String(n).padStart(2, '0')}-${['flat', 'panels', 'chart', 'gradient', 'stripes', 'checker', 'logo', 'noisy-gradient'][kind]}`, data, width, height });
  }
  return out;
}
