import { inspectWithFingerprint } from '../app/verify-image.js';
import { loadConfig } from '../config.js';
import { describeFailure, parse, printJson, readInput, reportFailure } from './files.js';
import { checkingFingerprint } from './fingerprint-for-cli.js';
import { checkingProvenance } from './keys-for-cli.js';
import { UsageError } from './usage-error.js';

export async function verifyCommand(args: readonly string[]): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' }, jwks: { type: 'string' }, 'allow-private': { type: 'boolean' } });
  if (positionals.length === 0) throw new UsageError('verify needs at least one file');
  if (values['allow-private'] && values.jwks === undefined) throw new UsageError('--allow-private only goes with --jwks URL');
  let provenance;
  let fingerprint;
  let maxImagePixels;
  try {
    const config = loadConfig();
    maxImagePixels = config.maxImagePixels;
    provenance = await checkingProvenance(config, values.jwks, { allowPrivate: values['allow-private'] ?? false });
    fingerprint = checkingFingerprint(config);
  } catch (error) {
    reportFailure(error, values.json);
    return 1;
  }
  let failed = 0;
  for (const file of positionals) {
    try {
      const { result, details } = await inspectWithFingerprint(await readInput(file), { provenance, fingerprint, maxImagePixels });
      if (values.json) {
        printJson({ file, ...result, format: details.format, dataMining: details.dataMining.map((d) => d.value), warnings: details.warnings });
        continue;
      }
      const lines = [`${file}: ${result.optedOut ? 'OPTED OUT' : 'not opted out'} (${details.format.toUpperCase()})`];
      if (details.dataMining.length === 0) lines.push('  plus:DataMining: absent');
      for (const d of details.dataMining) {
        lines.push(`  plus:DataMining: ${d.value}${d.label ? ` (${d.label})` : ''}${d.extended ? ' [Extended XMP]' : ''}`);
      }
      if (details.otherConstraints !== undefined) lines.push(`  plus:OtherConstraints: ${details.otherConstraints}`);
      if (details.tdm.reservation !== undefined) lines.push(`  tdm:reservation: ${details.tdm.reservation}`);
      if (details.tdm.policy !== undefined) lines.push(`  tdm:policy: ${details.tdm.policy}`);
      if (details.c2pa) lines.push('  C2PA manifest: present (signature not checked)');
      lines.push(`  signals: ${result.signals.length ? result.signals.join(', ') : 'none'}`);
      const p = result.provenance;
      lines.push(`  provenance tag: ${!p.present ? 'none' : p.valid ? 'valid' : p.verifiable ? 'INVALID (the file or its value changed since it was signed)' : 'present, not verifiable with these keys'}`);
      const f = result.fingerprint;
      const share = `${Math.round(f.confidence * 100)} % of ${f.blocks} blocks match`;
      lines.push(`  fingerprint (experimental): ${f.blocks === 0 ? 'no block could vote (no key, or an image too small, too flat, or unreadable as pixels)' : f.present ? `PRESENT, ${share}` : `not found, ${share}`}`);
      lines.push(`  sha256: ${result.sha256}`);
      for (const warning of details.warnings) lines.push(`  warning: ${warning}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    } catch (error) {
      failed++;
      const failure = describeFailure(error);
      if (values.json) printJson({ file, ...failure });
      else process.stderr.write(`${file}: ${failure.error}\n`);
    }
  }
  return failed > 0 ? 1 : 0;
}
