/**
 * Pictures for the fingerprint benchmark.
 *
 * Natural photos and graphics (illustrations, renders, paintings: the hard
 * negatives with little texture, and the low-capacity positives) come from
 * Debian packages installed at benchmark time (never committed:
 * CC-BY/CC-BY-SA/GPL attribution duties and ~200 MB), selected by the
 * research note's allow-lists of file names. More graphics, the flattest
 * and most regular ones, are drawn in code.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { random } from '../test/support/random.js';

const PACKAGES = ['lomiri-wallpapers-16.04', 'lomiri-wallpapers-20.04', 'mate-backgrounds', 'plasma-workspace-wallpapers', 'python-matplotlib-data', 'ukui-wallpapers'];

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
/** Graphics: ukui-wallpapers (all 12), three lomiri 20.04 illustrations, five plasma renders and paintings. */
const UKUI_GRAPHICS = ['2004default.jpg', 'calla.png', 'city.png', 'desert.png', 'firstgeneration.jpg', 'fluent-color.png', 'focal-ubuntukylin.png', 'goldfish.png', 'rhythm.jpg', 'rollpaper.png', 'string.jpg', 'the-mouse.jpg'];
const LOMIRI_GRAPHICS = ['Fossa_by_Jasper_Roks.jpg', 'Infinite-Sea_by_Aury88.jpg', 'Painting-Colors_by__herobrine7gamer.jpg'];
const PLASMA_GRAPHICS = ['Autumn', 'PastelHills', 'SafeLanding', 'Shell', 'Canopee'];

export interface PhotoFile {
  readonly name: string;
  readonly path: string;
}

/** The largest image of a plasma wallpaper theme; some sizes are empty placeholders. */
function plasmaImage(name: string): PhotoFile | undefined {
  const dir = join(PLASMA, name, 'contents', 'images');
  if (!existsSync(dir)) return undefined;
  const largest = readdirSync(dir)
    .filter((f) => /\.(jpe?g|png)$/i.test(f))
    .map((f) => ({ f, size: statSync(join(dir, f)).size, pixels: f.match(/^(\d+)x(\d+)/)?.slice(1).reduce((a, b) => a * Number(b), 1) ?? 0 }))
    .filter((c) => c.size > 0)
    .sort((a, b) => b.pixels - a.pixels)[0];
  return largest && { name, path: join(dir, largest.f) };
}

const present = (files: PhotoFile[]) => files.filter((f) => existsSync(f.path) && statSync(f.path).size > 0);

/** The allow-listed photos that are on this machine. */
function photoFiles(): PhotoFile[] {
  const files: PhotoFile[] = [];
  for (const name of LOMIRI_PHOTOS) files.push({ name, path: join(LOMIRI, `${name}.jpg`) });
  for (const name of MATE_PHOTOS) files.push({ name, path: join(MATE, `${name}.jpg`) });
  for (const name of PLASMA_PHOTOS) {
    const file = plasmaImage(name);
    if (file) files.push(file);
  }
  files.push({ name: 'grace_hopper', path: MATPLOTLIB });
  return present(files);
}

/** The allow-listed graphics that are on this machine. */
function graphicFiles(): PhotoFile[] {
  const files: PhotoFile[] = [...UKUI_GRAPHICS, ...LOMIRI_GRAPHICS].map((f) => ({ name: f.replace(/\.\w+$/, ''), path: join(LOMIRI, f) }));
  for (const name of PLASMA_GRAPHICS) {
    const file = plasmaImage(name);
    if (file) files.push(file);
  }
  return present(files);
}

/** Installs the picture packages when pictures are missing (needs root, as on CI). */
export function ensurePictures(log: (line: string) => void): { photos: PhotoFile[]; graphics: PhotoFile[] } {
  if (photoFiles().length < 40 || graphicFiles().length < 19) {
    log(`pictures missing; installing ${PACKAGES.join(' ')} ...`);
    const install = () => execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...PACKAGES], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    try {
      install();
    } catch {
      execFileSync('apt-get', ['update'], { stdio: 'inherit' });
      install();
    }
  }
  const photos = photoFiles();
  if (photos.length === 0) throw new Error(`no photos after installing ${PACKAGES.join(' ')}`);
  return { photos, graphics: graphicFiles() };
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
export function drawnGraphics(count: number): RgbImage[] {
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
