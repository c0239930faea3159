/**
 * Key files are rewritten through a temporary file that no one else can
 * have prepared: created exclusively, under a name no one can guess, never
 * through a symbolic link, 0600. A temporary name that could be predicted
 * (the file's name and the process id) and was opened through a link handed
 * the private signing key to whoever planted the link, in a directory others
 * can write.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FingerprintKeys } from '../../src/adapters/fingerprint-keys.js';
import { SigningKeys } from '../../src/adapters/signing-keys.js';

const work = mkdtempSync(join(tmpdir(), 'optmark-private-file-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The names a rotation used to write through: the file's name, the process id, maybe a time in milliseconds. */
function plantLinks(keyFile: string, target: string): string[] {
  const planted = [`${keyFile}.${process.pid}.tmp`];
  const now = Date.now();
  for (let ms = now - 50; ms < now + 5000; ms += 1) planted.push(`${keyFile}.${process.pid}.${ms}.tmp`);
  for (const link of planted) symlinkSync(target, link);
  return planted;
}

describe.each([
  ['the signing key ring', (path: string) => SigningKeys.open(path), (keys: SigningKeys | FingerprintKeys) => (keys as SigningKeys).rotate()],
  ['the fingerprint secrets', (path: string) => FingerprintKeys.open(path), (keys: SigningKeys | FingerprintKeys) => (keys as FingerprintKeys).rotate()],
] as const)('rotating %s', (_, open, rotate) => {
  it('with links planted at the old temporary names: nothing goes through them, the file is replaced whole, 0600, and the links are left as they were', () => {
    const dir = mkdtempSync(join(work, 'rotate-'));
    const keyFile = join(dir, 'keys.json');
    const keys = open(keyFile);
    const before = readFileSync(keyFile, 'utf8');
    // Where another user would like the secret to go: a file they can read, which the link names.
    const loot = join(work, `loot-${Math.random().toString(36).slice(2)}`);
    writeFileSync(loot, 'nothing yet');
    const planted = plantLinks(keyFile, loot);

    rotate(keys);

    expect(readFileSync(loot, 'utf8')).toBe('nothing yet');
    const stats = lstatSync(keyFile);
    expect(stats.isFile()).toBe(true);
    expect(stats.mode & 0o777).toBe(0o600);
    const after = readFileSync(keyFile, 'utf8');
    expect(after).not.toBe(before);
    expect(JSON.parse(after)).toBeTypeOf('object');
    // Each planted link is still a link to the loot (nothing renamed over it or through it), and no temporary file is left.
    for (const link of planted) expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readdirSync(dir).filter((name) => !planted.some((p) => p.endsWith(name)))).toEqual(['keys.json']);
  });

  it('created where a link waits at the key file itself: refused, nothing written through it', () => {
    const dir = mkdtempSync(join(work, 'create-'));
    mkdirSync(join(dir, 'elsewhere'));
    const keyFile = join(dir, 'keys.json');
    const loot = join(dir, 'elsewhere', 'loot');
    symlinkSync(loot, keyFile);
    expect(() => open(keyFile)).toThrow();
    expect(() => lstatSync(loot)).toThrow(/ENOENT/);
  });
});
