/**
 * The fingerprint for the local commands: the deployment's secrets
 * (OPTMARK_FINGERPRINT_KEYS, default DATA_DIR/fingerprint-keys.json), so a
 * file marked on the command line is found by the server and the other way
 * round. One file at a time, so detection runs in this thread.
 */
import { createFingerprinting, type Fingerprinting, type PixelPort } from '../app/fingerprint.js';
import { FingerprintKeys } from '../adapters/fingerprint-keys.js';
import type { Config } from '../config.js';

/**
 * The pixel decoder (sharp) and the detector, loaded on first use: a
 * deployment without fingerprint keys never decodes, and the command does
 * not pay for loading libvips.
 */
function lazyPixels(config: Config): PixelPort {
  let decoder: Promise<PixelPort> | undefined;
  const pixels = () => (decoder ??= import('../adapters/pixels.js').then((m) => m.createPixelDecoder({ maxPixels: config.maxPixels, concurrency: 1, queue: 1 })));
  return {
    decode: async (bytes, options) => (await pixels()).decode(bytes, options),
    probe: async (bytes) => (await pixels()).probe(bytes),
    withSlot: async (bytes, job) => (await pixels()).withSlot(bytes, job),
  } as PixelPort;
}

const worker = () => import('../adapters/fingerprint-worker.js');

function fingerprinting(config: Config, keys: FingerprintKeys | undefined): Fingerprinting {
  return createFingerprinting({
    pixels: lazyPixels(config),
    detect: async (task) => (await worker()).default(task),
    embed: async (task) => (await worker()).embed(task),
    detecting: () => keys?.detecting ?? [],
    marking: () => keys?.marking,
  });
}

/** For verify: the secrets if this deployment has any (none are created). */
export function checkingFingerprint(config: Config): Fingerprinting {
  return fingerprinting(config, FingerprintKeys.openExisting(config.fingerprintKeysPath));
}

/** For protect --fingerprint: the secrets, created with a first one if there are none yet (and then said so on stderr). */
export function markingFingerprint(config: Config): Fingerprinting {
  const keys = FingerprintKeys.open(config.fingerprintKeysPath);
  if (keys.created) announceCreatedFingerprintKey(keys);
  return fingerprinting(config, keys);
}

/**
 * One line on stderr (stdout stays the command's output, JSON with --json):
 * a secret made now, and where, since a mark is only ever found with it.
 */
export function announceCreatedFingerprintKey(keys: FingerprintKeys): void {
  process.stderr.write(
    `optmark: created a new fingerprint key (version ${keys.marking.version}) in ${keys.path}; marks made with it are found only by a deployment that has this file\n`,
  );
}
