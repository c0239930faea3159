/**
 * The CLI and the deployment's key files (fingerprint-keys.json,
 * signing-keys.json), as a user meets them: a file that cannot be used is one
 * line naming it (or one JSON object with --json), never a stack trace, and
 * `serve` refuses to start on it; a listing only reads; a file the CLI
 * creates is announced on stderr, with stdout left to the output; refusals of
 * `fingerprint-keys remove` are failures with a code, not usage errors.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, childEnv, XMP_JPG } from '../process/support.js';

const work = mkdtempSync(join(tmpdir(), 'optmark-key-files-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `optmark args` in `cwd`, with only the optmark settings given in `env`. */
function optmarkIn(cwd: string, env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: childEnv(env), timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A fresh directory under the test's own, holding a copy of a small JPEG (photo.jpg). */
let scratches = 0;
function scratch(): string {
  const dir = join(work, `case-${++scratches}`);
  mkdirSync(dir);
  copyFileSync(XMP_JPG, join(dir, 'photo.jpg'));
  return dir;
}

const NO_STACK = /\n\s+at |SyntaxError|TypeError/;

/** A failed run in text: exit 1, no stack trace, and `line` among standard error's lines. */
function expectOneLineFailure(run: Run, line: string): void {
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr).not.toMatch(NO_STACK);
  expect(run.stderr.split('\n')).toContain(line);
}

/** A failed run with --json: exit 1, no stack trace; the failure object printed on standard output. */
function jsonFailure(run: Run): { error: string; code: string } {
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr).not.toMatch(NO_STACK);
  return JSON.parse(run.stdout) as { error: string; code: string };
}

describe('a key file that cannot be used', () => {
  const dir = scratch();
  writeFileSync(join(dir, 'bad.json'), '{"garbage":\n');
  writeFileSync(join(dir, 'other.json'), '{"hello": "world"}\n');
  const env = (extra: Record<string, string>) => ({ OPTMARK_DATA_DIR: join(dir, 'data'), ...extra });
  const notJson = (kind: string) => `the ${kind} ${join(dir, 'bad.json')} is not valid JSON (Unexpected end of JSON input)`;
  const notKeys = (kind: string) => new RegExp(`^the ${kind} ${join(dir, 'other.json').replace(/[.]/g, '\\.')} is not an optmark `);

  it.each([
    ['protect --fingerprint', ['protect', '--fingerprint', 'photo.jpg']],
    ['verify', ['verify', 'photo.jpg']],
    ['fingerprint-keys list', ['fingerprint-keys', 'list']],
    ['fingerprint-keys rotate', ['fingerprint-keys', 'rotate']],
    ['fingerprint-keys remove', ['fingerprint-keys', 'remove', '1']],
  ])('OPTMARK_FINGERPRINT_KEYS, %s: one line naming the file and what is wrong, exit 1; with --json, a JSON object on stdout', async (_name, args) => {
    expectOneLineFailure(await optmarkIn(dir, env({ OPTMARK_FINGERPRINT_KEYS: 'bad.json' }), ...args), `optmark: ${notJson('fingerprint key file')}`);
    const json = await optmarkIn(dir, env({ OPTMARK_FINGERPRINT_KEYS: 'bad.json' }), ...args, '--json');
    expect(json.code, json.stderr).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({ error: notJson('fingerprint key file'), code: 'invalid_key_file' });

    const failure = jsonFailure(await optmarkIn(dir, env({ OPTMARK_FINGERPRINT_KEYS: 'other.json' }), ...args, '--json'));
    expect(failure.code).toBe('invalid_key_file');
    expect(failure.error).toMatch(notKeys('fingerprint key file'));
    // Nothing was written over the broken files.
    expect(readFileSync(join(dir, 'bad.json'), 'utf8')).toBe('{"garbage":\n');
  });

  it.each([
    ['protect', ['protect', '--out', 'out', 'photo.jpg']],
    // A folder: worker threads (beyond the two files marked on the main thread) are started before the key
    // ring is opened, and stopped when it cannot be.
    ['protect of a folder', ['protect', '--concurrency', '4', '--out', 'out', '.']],
    ['verify', ['verify', 'photo.jpg']],
    ['signing-keys list', ['signing-keys', 'list']],
    ['signing-keys rotate', ['signing-keys', 'rotate']],
  ])('OPTMARK_SIGNING_KEYS, %s: the same', async (_name, args) => {
    expectOneLineFailure(await optmarkIn(dir, env({ OPTMARK_SIGNING_KEYS: 'bad.json' }), ...args), `optmark: ${notJson('signing key file')}`);
    const failure = jsonFailure(await optmarkIn(dir, env({ OPTMARK_SIGNING_KEYS: 'other.json' }), ...args, '--json'));
    expect(failure).toMatchObject({ code: 'invalid_key_file' });
    expect(failure.error).toMatch(notKeys('signing key file'));
  });

  it('a signing key ring whose active private key is not a key: named, not a crypto stack trace', async () => {
    const ring = { version: 1, active: 'k1', keys: [{ kid: 'k1', createdAt: '2026-01-01T00:00:00.000Z', retiredAt: null, publicJwk: {}, privateKey: 'not a key' }] };
    writeFileSync(join(dir, 'broken-ring.json'), JSON.stringify(ring));
    const run = await optmarkIn(dir, env({ OPTMARK_SIGNING_KEYS: 'broken-ring.json' }), 'verify', 'photo.jpg');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^optmark: the signing key file ${join(dir, 'broken-ring.json').replace(/[.]/g, '\\.')} has an active key k1 whose private key cannot be read \\(.+\\)\n$`));
  });

  it('does not echo the file into the message (it holds secrets)', async () => {
    writeFileSync(join(dir, 'secret-text.json'), 'SECRETSECRETSECRET');
    const run = await optmarkIn(dir, env({ OPTMARK_FINGERPRINT_KEYS: 'secret-text.json' }), 'fingerprint-keys', 'list');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/is not valid JSON \(Unexpected token 'S'\)\n$/);
    expect(run.stderr).not.toContain('SECRETSECRET');
  });

  it.each([
    ['OPTMARK_FINGERPRINT_KEYS', 'fingerprint key file'],
    ['OPTMARK_SIGNING_KEYS', 'signing key file'],
  ])('serve with a broken %s refuses to start with that one line, before touching the data directory', async (variable, kind) => {
    const data = join(dir, `serve-data-${variable}`);
    const run = await optmarkIn(dir, { OPTMARK_DATA_DIR: data, PORT: '0', [variable]: 'bad.json' }, 'serve');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(`optmark: ${notJson(kind)}\n`);
    expect(existsSync(data)).toBe(false);
  });
});

describe('listing only reads', () => {
  it('fingerprint-keys list and signing-keys list with no key file say there is none ([] with --json) and create nothing', async () => {
    const dir = scratch();
    const env = { OPTMARK_DATA_DIR: join(dir, 'data') };
    expect(await optmarkIn(dir, env, 'fingerprint-keys', 'list', '--json')).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    expect(await optmarkIn(dir, env, 'signing-keys', 'list', '--json')).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    const text = await optmarkIn(dir, env, 'fingerprint-keys', 'list');
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(`No fingerprint keys: there is no ${join(dir, 'data', 'fingerprint-keys.json')} (protect --fingerprint or fingerprint-keys rotate creates it).\n`);
    expect((await optmarkIn(dir, env, 'signing-keys', 'list')).stdout).toMatch(/^No signing keys: /);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('rotate on a deployment without keys creates them: version 1 marks (no unused version before it), announced on stderr', async () => {
    const dir = scratch();
    const env = { OPTMARK_DATA_DIR: join(dir, 'data') };
    const run = await optmarkIn(dir, env, 'fingerprint-keys', 'rotate', '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ version: 1, marking: true });
    expect(run.stderr).toBe(`optmark: created a new fingerprint key (version 1) in ${join(dir, 'data', 'fingerprint-keys.json')}; marks made with it are found only by a deployment that has this file\n`);
    expect(JSON.parse((await optmarkIn(dir, env, 'fingerprint-keys', 'list', '--json')).stdout)).toMatchObject([{ version: 1, marking: true }]);
    const signing = await optmarkIn(dir, env, 'signing-keys', 'rotate', '--json');
    expect(signing.code).toBe(0);
    expect(signing.stderr).toMatch(/^optmark: created a new signing key ring in .*signing-keys\.json; /);
    const keys = JSON.parse((await optmarkIn(dir, env, 'signing-keys', 'list', '--json')).stdout) as Array<{ kid: string; active: boolean }>;
    expect(keys).toEqual([expect.objectContaining({ kid: (JSON.parse(signing.stdout) as { kid: string }).kid, active: true })]);
  });
});

describe('keys the CLI creates are announced', () => {
  it('protect --fingerprint run where there is no data directory: one line each on stderr, with the absolute path; stdout only the JSON; said once', async () => {
    const dir = scratch();
    // No OPTMARK_DATA_DIR: the default ./data of the directory it is run from.
    const run = await optmarkIn(dir, {}, 'protect', '--fingerprint', '--json', '--out', 'out', 'photo.jpg');
    // XMP.jpg is too small to carry the mark: the file fails, the keys are made all the same.
    const lines = run.stderr.trim().split('\n');
    expect(lines).toEqual([
      `optmark: created a new signing key ring in ${join(dir, 'data', 'signing-keys.json')}; provenance tags signed with it verify only with this file or its published public keys (JWKS)`,
      `optmark: created a new fingerprint key (version 1) in ${join(dir, 'data', 'fingerprint-keys.json')}; marks made with it are found only by a deployment that has this file`,
    ]);
    expect(() => JSON.parse(run.stdout) as unknown).not.toThrow();
    expect(existsSync(join(dir, 'data', 'fingerprint-keys.json'))).toBe(true);
    const again = await optmarkIn(dir, {}, 'protect', '--fingerprint', '--json', '--out', 'out', 'photo.jpg');
    expect(again.stderr).toBe('');
  });

  it('plain protect: the signing key ring, once', async () => {
    const dir = scratch();
    const run = await optmarkIn(dir, {}, 'protect', 'photo.jpg');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('photo.jpg -> photo-optout.jpg (marked DMI-PROHIBITED-AIMLTRAINING)\n');
    expect(run.stderr).toMatch(new RegExp(`^optmark: created a new signing key ring in ${join(dir, 'data', 'signing-keys.json').replace(/[.]/g, '\\.')}; [^\n]+\n$`));
    expect(existsSync(join(dir, 'data', 'fingerprint-keys.json'))).toBe(false);
    expect((await optmarkIn(dir, {}, 'protect', '--out', 'again', 'photo.jpg')).stderr).toBe('');
  });
});

describe('protect of a folder, marked on the main thread and in worker threads', () => {
  it('creates the signing key ring once, before any thread signs with it: announced once, every tag valid', async () => {
    const dir = scratch();
    mkdirSync(join(dir, 'in'));
    for (let i = 0; i < 6; i++) copyFileSync(XMP_JPG, join(dir, 'in', `photo-${i}.jpg`));
    const run = await optmarkIn(dir, {}, 'protect', '--concurrency', '3', '--out', 'out', 'in');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr.match(/created a new signing key ring/g)).toHaveLength(1);
    const checked = await optmarkIn(dir, {}, 'verify', '--json', 'out');
    const tags = checked.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { provenance: { valid: boolean } }).provenance.valid);
    expect(tags).toEqual(Array(6).fill(true));
  });
});

describe('fingerprint-keys remove refused', () => {
  it('an unknown version and the marking one: exit 1, one line without the usage hint; with --json an error and a code on stdout', async () => {
    const dir = scratch();
    const env = { OPTMARK_DATA_DIR: join(dir, 'data') };
    // No key file at all: no such version either.
    const none = await optmarkIn(dir, env, 'fingerprint-keys', 'remove', '1', '--json');
    expect(none.code).toBe(1);
    expect(JSON.parse(none.stdout)).toMatchObject({ code: 'fingerprint_key_not_found' });
    expect(existsSync(join(dir, 'data'))).toBe(false);

    await optmarkIn(dir, env, 'fingerprint-keys', 'rotate');
    await optmarkIn(dir, env, 'fingerprint-keys', 'rotate');
    const unknown = await optmarkIn(dir, env, 'fingerprint-keys', 'remove', '7');
    expect(unknown).toEqual({ code: 1, stdout: '', stderr: 'optmark: there is no fingerprint key version 7 (the versions are 2, 1)\n' });
    const unknownJson = await optmarkIn(dir, env, 'fingerprint-keys', 'remove', '7', '--json');
    expect(unknownJson.code).toBe(1);
    expect(JSON.parse(unknownJson.stdout)).toEqual({ error: 'there is no fingerprint key version 7 (the versions are 2, 1)', code: 'fingerprint_key_not_found' });
    const newest = await optmarkIn(dir, env, 'fingerprint-keys', 'remove', '2');
    expect(newest.code).toBe(1);
    expect(newest.stderr).toBe('optmark: fingerprint key version 2 is the one new marks are made with, and cannot be removed; rotate first\n');
    const newestJson = await optmarkIn(dir, env, 'fingerprint-keys', 'remove', '2', '--json');
    expect(newestJson.code).toBe(1);
    expect(JSON.parse(newestJson.stdout)).toMatchObject({ code: 'fingerprint_key_in_use' });
    // A malformed command line is still a usage error.
    expect((await optmarkIn(dir, env, 'fingerprint-keys', 'remove', 'two')).code).toBe(2);
  });
});

describe('protect --fingerprint over the pixel decoder limit', () => {
  it('is fingerprint_not_possible, saying the limit is the fingerprint decoder\'s and that protect without --fingerprint decodes nothing', async () => {
    const dir = scratch();
    const raw = Buffer.alloc(1200 * 900 * 3, 128);
    await sharp(raw, { raw: { width: 1200, height: 900, channels: 3 } }).jpeg().toFile(join(dir, 'big.jpg'));
    const env = { OPTMARK_DATA_DIR: join(dir, 'data'), OPTMARK_MAX_PIXELS: '500000' };
    const run = await optmarkIn(dir, env, 'protect', '--fingerprint', '--json', '--out', 'out', 'big.jpg');
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      file: 'big.jpg',
      outcome: 'failed',
      error: 'This image cannot be fingerprinted: it is 1200 x 900 pixels, more than the 500000 pixels this deployment decodes for the fingerprint (OPTMARK_MAX_PIXELS); protect it without the fingerprint, which decodes no pixels',
      code: 'fingerprint_not_possible',
    });
    // Plain protect takes it, as the message says.
    expect((await optmarkIn(dir, env, 'protect', '--out', 'out', 'big.jpg')).code).toBe(0);
    // Over OPTMARK_MAX_IMAGE_PIXELS, protect's own refusal, with or without the fingerprint: no word about the decoder.
    const over = await optmarkIn(dir, { ...env, OPTMARK_MAX_IMAGE_PIXELS: '500000' }, 'protect', '--fingerprint', '--json', '--out', 'over', 'big.jpg');
    expect(JSON.parse(over.stdout)).toEqual({ file: 'big.jpg', outcome: 'failed', error: 'The image is 1200x900 pixels, over the limit of 500000 pixels', code: 'image_dimensions_too_large' });
  });
});
