import { basename, dirname, join, resolve } from 'node:path';
import { protect, protectWithFingerprint } from '../app/protect-image.js';
import { isProhibitedCode, PROHIBITED_CODES } from '../core/xmp/vocabulary.js';
import { loadConfig } from '../config.js';
import { describeFailure, parse, printJson, readInput, reportFailure, writeOutput, CliError } from './files.js';
import { markingFingerprint } from './fingerprint-for-cli.js';
import { signingProvenance } from './keys-for-cli.js';
import { UsageError } from './usage-error.js';

const FINGERPRINT_NOTE = { none: '', added: ', fingerprinted', found: ', fingerprint already there, not added again' } as const;

export async function protectCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    out: { type: 'string' },
    value: { type: 'string' },
    json: { type: 'boolean' },
    fingerprint: { type: 'boolean' },
  });
  if (positionals.length === 0) throw new UsageError('protect needs at least one file');
  // Without --value, a file that already opts out keeps its value (protect-image.ts).
  const value = values.value;
  if (value !== undefined && !isProhibitedCode(value)) throw new UsageError(`--value must be one of ${PROHIBITED_CODES.join(', ')}`);
  const config = loadConfig();
  let signer;
  let fingerprint;
  try {
    signer = signingProvenance(config).signer;
    fingerprint = values.fingerprint ? markingFingerprint(config) : undefined;
  } catch (error) {
    // A key file that cannot be used: one line (or JSON object), before any file.
    reportFailure(error, values.json);
    return 1;
  }
  let failed = 0;
  for (const file of positionals) {
    try {
      const original = await readInput(file);
      const options = { value, filename: basename(file), signer, maxImagePixels: config.maxImagePixels };
      const result = fingerprint ? await protectWithFingerprint(original, fingerprint, options) : protect(original, options);
      const output = join(values.out ?? dirname(file), result.filename);
      if (resolve(output) === resolve(file) && (result.changed || fingerprint)) {
        throw new CliError(`refusing to overwrite ${file} with its marked copy; pass --out DIR`, 'would_overwrite_input');
      }
      if (resolve(output) !== resolve(file)) await writeOutput(output, result.bytes);
      if (values.json) {
        printJson({ file, output, mimeType: result.mimeType, filename: result.filename, sha256: result.sha256, signals: result.signals, value: result.value, alreadyCarried: result.alreadyCarried, changed: result.changed, c2paInvalidated: result.c2paInvalidated, ...(result.fingerprint ? { fingerprint: result.fingerprint } : {}) });
      } else {
        const marking = !result.changed ? `already marked ${result.value}, copied unchanged` : result.alreadyCarried ? `already carried ${result.value}, kept` : `marked ${result.value}`;
        const note = `${marking}${FINGERPRINT_NOTE[result.fingerprint ?? 'none']}`;
        process.stdout.write(`${file} -> ${output} (${note})\n`);
        if (result.c2paInvalidated) process.stderr.write(`${file}: warning: its C2PA manifest no longer validates in the marked copy (writing XMP changes bytes the manifest's hash covers)\n`);
      }
    } catch (error) {
      failed++;
      const failure = describeFailure(error);
      if (values.json) printJson({ file, ...failure });
      else process.stderr.write(`${file}: ${failure.error}\n`);
    }
  }
  return failed > 0 ? 1 : 0;
}
