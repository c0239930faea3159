/**
 * Pictures for the fingerprint benchmark.
 *
 * Natural photos and graphics (illustrations, renders, paintings: the hard
 * negatives with little texture, and the low-capacity positives) come from
 * Debian packages fetched at benchmark time (never committed: CC-BY/CC-BY-SA/
 * GPL/BSD attribution duties and ~250 MB of packages), selected by
 * allow-lists of file names. Each package is downloaded with `apt-get
 * download` and only the allow-listed files are unpacked under
 * .bench-tmp/pictures (no root, no dependencies pulled in); a package
 * installed system-wide is used where it is. More graphics, the flattest and
 * most regular ones, are drawn in code.
 *
 * The photos: the research note's 41 (lomiri, mate, plasma, matplotlib),
 * and 30 more from the OpenCV sample data (opencv-doc), scikit-image's data
 * (python3-skimage) and digiKam (digikam-data), each looked at one by one:
 * photographs of real scenes (street signs, buildings, fruit, animals,
 * people, aerial views, a graffiti wall), no renders or drawings. Of pairs
 * of near-identical frames (stereo pairs, video frames) only one is taken.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { random } from '../test/support/random.js';

const ROOT = join(import.meta.dirname, '..');
/** Where the packages' allow-listed files are unpacked (paths inside keep their installed layout). */
const UNPACKED = join(ROOT, '.bench-tmp', 'pictures');
const DEBS = join(ROOT, '.bench-tmp', 'debs');

interface Source {
  readonly pkg: string;
  /** tar patterns of the package's files to unpack (installed paths, with the leading ./). */
  readonly unpack: readonly string[];
}

const LOMIRI = '/usr/share/backgrounds';
const MATE = '/usr/share/backgrounds/mate/nature';
const PLASMA = '/usr/share/wallpapers';
const MATPLOTLIB = '/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg';
const OPENCV = '/usr/share/doc/opencv-doc/examples';
const SKIMAGE = '/usr/lib/python3/dist-packages/skimage/data';
const DIGIKAM = '/usr/share/digikam/about/images/body-background.jpg';

const LOMIRI_PHOTOS = [
  'Bridge_by_Sander_Klootwijk', 'Dragonfly_by_Bolly', 'Picture_0B_by_freespace', 'Picture_1A_by_freespace', 'Wine_by_Jakkub_Mede',
  'aitzgorri_by_Aitzol_Berasategi', 'analogpattern_by_Peter_Nerlich', 'free_by_Peter_Nerlich', 'friends_by_Aitzol_Berasategi',
  'greentock_by_Peter_Nerlich', 'life_by_Aitzol_Berasategi', 'picosdeeuropa_by_Aitzol_Berasategi', 'seeding_by_Clements_Engelhardt',
  'sunset_by_Aitzol_Berasategi', 'umang_by_Abhishek_Mudgal', 'Kleiber_by_Lukas_Baubkus',
];
const MATE_PHOTOS = ['Aqua', 'Blinds', 'Dune', 'FreshFlower', 'Garden', 'GreenMeadow', 'LadyBird', 'RainDrops', 'Storm', 'TwoWings', 'Wood', 'YellowFlower'];
const PLASMA_PHOTOS = ['BytheWater', 'ColdRipple', 'ColorfulCups', 'DarkestHour', 'EveningGlow', 'FallenLeaf', 'Grey', 'Kite', 'OneStandsOut', 'Path', 'Volna', 'summer_1am'];
/** OpenCV sample data (opencv-doc): photographs, 0.2-1.4 MP. */
const OPENCV_PHOTOS = [
  'alphamat/input_images/plant.jpg', 'data/aero1.jpg', 'data/aloeL.jpg', 'data/baboon.jpg', 'data/board.jpg', 'data/building.jpg',
  'data/butterfly.jpg', 'data/ela_original.jpg', 'data/fruits.jpg', 'data/graf1.png', 'data/home.jpg', 'data/leuvenA.jpg',
  'data/licenseplate_motion.jpg', 'data/messi5.jpg', 'data/rubberwhale1.png', 'data/squirrel_cls.jpg', 'data/stuff.jpg',
  'text/scenetext01.jpg', 'text/scenetext02.jpg', 'text/scenetext03.jpg', 'text/scenetext04.jpg', 'text/scenetext05.jpg', 'text/scenetext06.jpg',
];
/** scikit-image's data (python3-skimage): photographs; camera is the grey "cameraman". */
const SKIMAGE_PHOTOS = ['astronaut.png', 'chelsea.png', 'coffee.png', 'motorcycle_left.png', 'rocket.jpg', 'camera.png'];
/** Graphics: ukui-wallpapers (all 12), three lomiri 20.04 illustrations, five plasma renders and paintings, three from OpenCV's samples. */
const UKUI_GRAPHICS = ['2004default.jpg', 'calla.png', 'city.png', 'desert.png', 'firstgeneration.jpg', 'fluent-color.png', 'focal-ubuntukylin.png', 'goldfish.png', 'rhythm.jpg', 'rollpaper.png', 'string.jpg', 'the-mouse.jpg'];
const LOMIRI_GRAPHICS = ['Fossa_by_Jasper_Roks.jpg', 'Infinite-Sea_by_Aury88.jpg', 'Painting-Colors_by__herobrine7gamer.jpg'];
const PLASMA_GRAPHICS = ['Autumn', 'PastelHills', 'SafeLanding', 'Shell', 'Canopee'];
/** A painting (Starry Night), a flat-shaded 3-D render, a cartoon illustration. */
const OPENCV_GRAPHICS = ['data/starry_night.jpg', 'data/Blender_Suzanne1.jpg', 'fuzzy/input.png'];

const rel = (path: string) => `.${path}`;
const SOURCES: readonly Source[] = [
  { pkg: 'lomiri-wallpapers-16.04', unpack: [rel(`${LOMIRI}/*`)] },
  { pkg: 'lomiri-wallpapers-20.04', unpack: [rel(`${LOMIRI}/*`)] },
  { pkg: 'mate-backgrounds', unpack: [rel(`${MATE}/*`)] },
  { pkg: 'plasma-workspace-wallpapers', unpack: [rel(`${PLASMA}/*`)] },
  { pkg: 'python-matplotlib-data', unpack: [rel(MATPLOTLIB)] },
  { pkg: 'ukui-wallpapers', unpack: [rel(`${LOMIRI}/*`)] },
  { pkg: 'opencv-doc', unpack: [...OPENCV_PHOTOS, ...OPENCV_GRAPHICS].map((f) => rel(`${OPENCV}/${f}`)) },
  { pkg: 'python3-skimage', unpack: SKIMAGE_PHOTOS.map((f) => rel(`${SKIMAGE}/${f}`)) },
  { pkg: 'digikam-data', unpack: [rel(DIGIKAM)] },
];

/** Debian packages the pictures come from. */
export const PICTURE_PACKAGES: readonly string[] = SOURCES.map((s) => s.pkg);

export interface PhotoFile {
  readonly name: string;
  readonly path: string;
  /** The Debian package it comes from. */
  readonly pkg: string;
}

/** The file as installed system-wide, else as unpacked by this benchmark. */
function locate(path: string): string {
  return existsSync(path) ? path : join(UNPACKED, path);
}

/** The largest image of a plasma wallpaper theme; some sizes are empty placeholders. */
function plasmaImage(name: string): PhotoFile | undefined {
  const dir = locate(join(PLASMA, name, 'contents', 'images'));
  if (!existsSync(dir)) return undefined;
  const largest = readdirSync(dir)
    .filter((f) => /\.(jpe?g|png)$/i.test(f))
    .map((f) => ({ f, size: statSync(join(dir, f)).size, pixels: f.match(/^(\d+)x(\d+)/)?.slice(1).reduce((a, b) => a * Number(b), 1) ?? 0 }))
    .filter((c) => c.size > 0)
    .sort((a, b) => b.pixels - a.pixels)[0];
  return largest && { name, path: join(dir, largest.f), pkg: 'plasma-workspace-wallpapers' };
}

const present = (files: PhotoFile[]) => files.filter((f) => existsSync(f.path) && statSync(f.path).size > 0);
const stem = (file: string) => file.replace(/^.*\//, '').replace(/\.\w+$/, '');

/** The allow-listed photos that are on this machine. */
function photoFiles(): PhotoFile[] {
  const files: PhotoFile[] = [];
  for (const name of LOMIRI_PHOTOS) files.push({ name, path: locate(join(LOMIRI, `${name}.jpg`)), pkg: name.startsWith('Kleiber') ? 'lomiri-wallpapers-20.04' : 'lomiri-wallpapers-16.04' });
  for (const name of MATE_PHOTOS) files.push({ name, path: locate(join(MATE, `${name}.jpg`)), pkg: 'mate-backgrounds' });
  for (const name of PLASMA_PHOTOS) {
    const file = plasmaImage(name);
    if (file) files.push(file);
  }
  files.push({ name: 'grace_hopper', path: locate(MATPLOTLIB), pkg: 'python-matplotlib-data' });
  for (const f of OPENCV_PHOTOS) files.push({ name: `opencv-${stem(f)}`, path: locate(`${OPENCV}/${f}`), pkg: 'opencv-doc' });
  for (const f of SKIMAGE_PHOTOS) files.push({ name: `skimage-${stem(f)}`, path: locate(`${SKIMAGE}/${f}`), pkg: 'python3-skimage' });
  files.push({ name: 'digikam-body-background', path: locate(DIGIKAM), pkg: 'digikam-data' });
  return present(files);
}

/** The allow-listed graphics that are on this machine. */
function graphicFiles(): PhotoFile[] {
  const files: PhotoFile[] = [
    ...UKUI_GRAPHICS.map((f) => ({ name: stem(f), path: locate(join(LOMIRI, f)), pkg: 'ukui-wallpapers' })),
    ...LOMIRI_GRAPHICS.map((f) => ({ name: stem(f), path: locate(join(LOMIRI, f)), pkg: 'lomiri-wallpapers-20.04' })),
  ];
  for (const name of PLASMA_GRAPHICS) {
    const file = plasmaImage(name);
    if (file) files.push(file);
  }
  for (const f of OPENCV_GRAPHICS) files.push({ name: `opencv-${stem(f)}`, path: locate(`${OPENCV}/${f}`), pkg: 'opencv-doc' });
  return present(files);
}

/** Total allow-listed: what a complete set of packages gives. */
export const ALLOW_LISTED = {
  photos: LOMIRI_PHOTOS.length + MATE_PHOTOS.length + PLASMA_PHOTOS.length + 1 + OPENCV_PHOTOS.length + SKIMAGE_PHOTOS.length + 1,
  graphics: UKUI_GRAPHICS.length + LOMIRI_GRAPHICS.length + PLASMA_GRAPHICS.length + OPENCV_GRAPHICS.length,
};

/** Downloads a package (apt-get download, no root needed) and unpacks the allow-listed files of it. */
function fetchPackage(source: Source, log: (line: string) => void): void {
  mkdirSync(DEBS, { recursive: true });
  mkdirSync(UNPACKED, { recursive: true });
  const debOf = () => readdirSync(DEBS).find((f) => f.startsWith(`${source.pkg}_`) && f.endsWith('.deb'));
  if (!debOf()) {
    log(`downloading ${source.pkg} ...`);
    const download = () => execFileSync('apt-get', ['download', source.pkg], { cwd: DEBS, stdio: 'inherit' });
    try {
      download();
    } catch {
      execFileSync('apt-get', ['update'], { stdio: 'inherit' });
      download();
    }
  }
  const deb = join(DEBS, debOf()!);
  // tar's exit status is 2 when a pattern matches nothing (a file gone from a newer package): the lists below report what is missing.
  execFileSync('bash', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --wildcards "${@:3}" || true', 'unpack', deb, UNPACKED, ...source.unpack], { stdio: 'inherit' });
}

/** Fetches the picture packages whose files are missing; returns the allow-listed pictures found. */
export function ensurePictures(log: (line: string) => void): { photos: PhotoFile[]; graphics: PhotoFile[] } {
  // Anything missing: every package is fetched again (downloads are kept in .bench-tmp/debs, so only the unpacking repeats).
  if (photoFiles().length + graphicFiles().length < ALLOW_LISTED.photos + ALLOW_LISTED.graphics) for (const source of SOURCES) fetchPackage(source, log);
  const photos = photoFiles();
  if (photos.length === 0) throw new Error(`no photos after fetching ${PICTURE_PACKAGES.join(' ')}`);
  return { photos, graphics: graphicFiles() };
}

/** The allow-listed pictures already on this machine (no fetching). */
export function listPictures(): { photos: PhotoFile[]; graphics: PhotoFile[] } {
  return { photos: photoFiles(), graphics: graphicFiles() };
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
