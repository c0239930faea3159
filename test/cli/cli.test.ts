/** The `optmark` command as a user runs it: the built bin, in a child process. */
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixFingerprintKey } from '../fingerprint/support.js';
import { childEnv } from '../process/support.js';
import { corpusFile } from '../support/corpus.js';
import { withSegments, xmpPacket, xmpSegment } from '../support/build.js';

const BIN = fileURLToPath(new URL('../../bin/optmark.js', import.meta.url));
let dir: string;

function optmark(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return optmarkWith({}, ...args);
}

function optmarkWith(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', env: childEnv(env) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

const jsonLines = (text: string) => text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);

/**
 * Settings a developer may have exported in the shell that runs the tests:
 * the commands under test must never see them (they would rotate that
 * developer's real key ring, or write to their database). They are set here
 * for the whole file, and the last test checks nothing reached them.
 */
const DEVELOPER_SETTINGS = ['OPTMARK_DATA_DIR', 'OPTMARK_SIGNING_KEYS', 'OPTMARK_FINGERPRINT_KEYS', 'DATABASE_URL'] as const;
let developer: string;
const saved = new Map<string, string | undefined>();

beforeAll(async () => {
  developer = await mkdtemp(join(tmpdir(), 'optmark-developer-'));
  const settings = {
    OPTMARK_DATA_DIR: join(developer, 'data'),
    OPTMARK_SIGNING_KEYS: join(developer, 'signing-keys.json'),
    OPTMARK_FINGERPRINT_KEYS: join(developer, 'fingerprint-keys.json'),
    DATABASE_URL: 'postgres://developer@127.0.0.1:1/their_database',
  };
  for (const name of DEVELOPER_SETTINGS) {
    saved.set(name, process.env[name]);
    process.env[name] = settings[name];
  }
  dir = await mkdtemp(join(tmpdir(), 'optmark-cli-'));
  await copyFile(corpusFile('exiftool/XMP.jpg').path, join(dir, 'photo.jpg'));
  await copyFile(corpusFile('pillow/hopper.webp').path, join(dir, 'hopper.webp'));
  await copyFile(corpusFile('pngsuite/xcsn0g01.png').path, join(dir, 'broken.png'));
  await writeFile(join(dir, 'notes.txt'), 'hello');
});
afterAll(async () => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await rm(dir, { recursive: true, force: true });
  await rm(developer, { recursive: true, force: true });
});

describe('optmark protect', () => {
  it('writes <name>-optout.<ext> next to the input and says so', async () => {
    const run = await optmark('protect', 'photo.jpg');
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('photo.jpg -> photo-optout.jpg (marked DMI-PROHIBITED-AIMLTRAINING)\n');
    const verified = await optmark('verify', '--json', 'photo-optout.jpg');
    expect(jsonLines(verified.stdout)[0]).toMatchObject({ file: 'photo-optout.jpg', optedOut: true, signals: ['iptc.dataMining'], format: 'jpeg' });
  });

  it('writes into --out with --value, one JSON object per file', async () => {
    // photo-optout.jpg is there already, with another value: --overwrite replaces it.
    const run = await optmark('protect', '--out', '.', '--value', 'DMI-PROHIBITED-GENAIMLTRAINING', '--overwrite', '--json', 'photo.jpg', 'hopper.webp');
    expect(run.code).toBe(0);
    const [jpeg, webp] = jsonLines(run.stdout);
    expect(webp).toMatchObject({ file: 'hopper.webp', output: 'hopper-optout.webp', mimeType: 'image/webp', filename: 'hopper-optout.webp', signals: ['iptc.dataMining'], changed: true });
    expect(jpeg!.sha256).toMatch(/^[0-9a-f]{64}$/);
    const written = await readFile(join(dir, 'hopper-optout.webp'));
    const { createHash } = await import('node:crypto');
    expect(createHash('sha256').update(written).digest('hex')).toBe(webp!.sha256);
    const verified = jsonLines((await optmark('verify', '--json', 'hopper-optout.webp')).stdout)[0]!;
    expect(verified.dataMining).toEqual(['http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING']);
  });

  it('exits 1 and names the problem for unreadable and corrupt files, still doing the others', async () => {
    const run = await optmark('protect', 'missing.jpg', 'broken.png', 'notes.txt', 'hopper.webp');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('missing.jpg: cannot read the file: no such file');
    expect(run.stderr).toContain('broken.png: Corrupt PNG: CRC error in chunk IDAT');
    expect(run.stderr).toContain('notes.txt: The file is not a JPEG, PNG or WebP image');
    expect(run.stdout).toContain('hopper.webp -> hopper-optout.webp');
    const json = jsonLines((await optmark('protect', '--json', 'missing.jpg', 'notes.txt')).stdout);
    expect(json).toEqual([
      { file: 'missing.jpg', outcome: 'failed', error: 'cannot read the file: no such file', code: 'unreadable_file' },
      { file: 'notes.txt', outcome: 'failed', error: 'The file is not a JPEG, PNG or WebP image (judged by its bytes, not its name or declared type)', code: 'unsupported_image_format' },
    ]);
    // A folder is not a file that fails: its copies need a place, said before any work.
    const folder = await optmark('protect', '.');
    expect(folder.code).toBe(2);
    expect(folder.stderr).toMatch(/^optmark: a folder's marked copies need a place: --out DIR .* or --in-place .*\nUsage:\n  optmark protect <file\|folder\.\.\.>/);
  });

  it('refuses a value outside the seven prohibiting codes, and unknown options', async () => {
    expect((await optmark('protect', '--value', 'DMI-ALLOWED', 'photo.jpg')).code).toBe(2);
    expect((await optmark('protect', '--frobnicate', 'photo.jpg')).code).toBe(2);
    expect((await optmark('protect')).code).toBe(2);
  });

  it('writes DMI-PROHIBITED-SEECONSTRAINT with its --other-constraints text, which it needs and which needs it', async () => {
    const text = `Licensed for search indexing only: Tom & Jerry's <"studio">, Zürich`;
    const run = await optmark('protect', '--out', 'see', '--json', '--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', text, 'photo.jpg');
    expect(run.code).toBe(0);
    expect(jsonLines(run.stdout)[0]).toMatchObject({ value: 'DMI-PROHIBITED-SEECONSTRAINT', changed: true });
    const verified = await optmark('verify', 'see/photo-optout.jpg');
    expect(verified.stdout).toContain(`plus:OtherConstraints: ${text}`);
    expect(jsonLines((await optmark('verify', '--json', 'see/photo-optout.jpg')).stdout)[0]).toMatchObject({ details: { otherConstraints: text } });
    // Run again: the copy there is this file's, with this text; with another text it is not.
    expect((await optmark('protect', '--out', 'see', '--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', text, 'photo.jpg')).stdout).toContain('already done');
    expect((await optmark('protect', '--out', 'see', '--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', 'Other terms', 'photo.jpg')).stderr).toContain('is in the way');

    const refusals = [
      [['--value', 'DMI-PROHIBITED-SEECONSTRAINT'], '--value DMI-PROHIBITED-SEECONSTRAINT needs --other-constraints TEXT'],
      [['--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', '  '], '--value DMI-PROHIBITED-SEECONSTRAINT needs --other-constraints TEXT'],
      [['--value', 'DMI-PROHIBITED', '--other-constraints', 'terms'], '--other-constraints goes with --value DMI-PROHIBITED-SEECONSTRAINT only'],
      [['--other-constraints', 'terms'], '--other-constraints goes with --value DMI-PROHIBITED-SEECONSTRAINT only'],
      [['--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', 'x'.repeat(1001)], 'has 1001 characters; it may have 1000 at most'],
      [['--value', 'DMI-PROHIBITED-SEECONSTRAINT', '--other-constraints', 'two\nlines'], 'holds the control character U+000A'],
    ] as const;
    for (const [args, message] of refusals) {
      const refused = await optmark('protect', '--out', 'see-refused', ...args, 'photo.jpg');
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stderr, args.join(' ')).toContain(message);
    }
  });

  it('keeps an opt-out value the file already carries unless --value asks for another, and says so', async () => {
    // A copy marked DMI-PROHIBITED-GENAIMLTRAINING elsewhere (its tag is another deployment's, so ours is signed anew).
    const other = { OPTMARK_DATA_DIR: join(dir, 'kept-deployment') };
    expect((await optmarkWith(other, 'protect', '--out', 'chosen', '--value', 'DMI-PROHIBITED-GENAIMLTRAINING', 'photo.jpg')).code).toBe(0);

    const text = await optmark('protect', '--out', 'kept', 'chosen/photo-optout.jpg');
    expect(text.stdout).toBe('chosen/photo-optout.jpg -> kept/photo-optout.jpg (already carried DMI-PROHIBITED-GENAIMLTRAINING, kept)\n');
    const json = jsonLines((await optmark('protect', '--out', 'kept-json', '--json', 'chosen/photo-optout.jpg')).stdout)[0]!;
    expect(json).toMatchObject({ value: 'DMI-PROHIBITED-GENAIMLTRAINING', alreadyCarried: true, changed: true });
    expect(jsonLines((await optmark('verify', '--json', 'kept/photo-optout.jpg')).stdout)[0]).toMatchObject({
      dataMining: ['http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING'],
      provenance: { present: true, valid: true, verifiable: true },
    });
    // Marked again here: nothing to change, and it says the value it carries.
    expect((await optmark('protect', 'kept/photo-optout.jpg')).stdout).toBe('kept/photo-optout.jpg -> kept/photo-optout.jpg (already marked DMI-PROHIBITED-GENAIMLTRAINING, left unchanged)\n');
    // Another value asked for explicitly replaces it.
    const replaced = jsonLines((await optmark('protect', '--out', 'replaced', '--json', '--value', 'DMI-PROHIBITED', 'chosen/photo-optout.jpg')).stdout)[0]!;
    expect(replaced).toMatchObject({ value: 'DMI-PROHIBITED', alreadyCarried: false, changed: true });
    expect((await optmark('protect', '--out', 'replaced-text', '--value', 'DMI-PROHIBITED', 'chosen/photo-optout.jpg')).stdout).toContain('(marked DMI-PROHIBITED)');
  });

  it('leaves an already-marked copy byte for byte as it was', async () => {
    await optmark('protect', 'photo.jpg');
    const before = await readFile(join(dir, 'photo-optout.jpg'));
    const run = await optmark('protect', 'photo-optout.jpg');
    expect(run.stdout).toContain('already marked');
    expect((await readFile(join(dir, 'photo-optout.jpg'))).equals(before)).toBe(true);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('optmark verify', () => {
  it('reports an unmarked file in words', async () => {
    const run = await optmark('verify', 'photo.jpg');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^photo\.jpg: not opted out \(JPEG\)\n {2}plus:DataMining: absent\n {2}signals: none\n {2}provenance tag: none\n {2}fingerprint \(experimental\): no block could vote \([^)]+\)\n {2}sha256: [0-9a-f]{64}\n$/);
  });

  it('shows what other vocabularies say, though signals lists nothing without a plus:DataMining field', async () => {
    const tdm = 'xmlns:tdm="http://www.w3.org/ns/tdmrep/" tdm:reservation="1"';
    await writeFile(join(dir, 'tdm.jpg'), withSegments(corpusFile('exiv2/smiley1.jpg').bytes, xmpSegment(xmpPacket(`<rdf:Description rdf:about="" ${tdm}/>`))));
    const text = await optmark('verify', 'tdm.jpg');
    expect(text.stdout).toContain('\n  tdm:reservation: 1\n  signals: none\n  also found: tdmrep.reservation (not in signals: the file has no plus:DataMining field)\n');
    const json = jsonLines((await optmark('verify', '--json', 'tdm.jpg')).stdout)[0]!;
    expect(json).toMatchObject({ optedOut: false, signals: [], details: { signals: ['tdmrep.reservation'], tdmrep: { reservation: '1', policy: null }, dataMining: [] } });
  });

  it('says why no block of a flat image could vote, with a fingerprint key present', async () => {
    const data = join(dir, 'flat-deployment');
    fixFingerprintKey(data, 'optmark test: cli flat');
    await writeFile(join(dir, 'flat.png'), await sharp({ create: { width: 512, height: 512, channels: 3, background: '#808080' } }).png().toBuffer());
    const run = await optmarkWith({ OPTMARK_DATA_DIR: data }, 'verify', 'flat.png');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('\n  fingerprint (experimental): no block could vote (no key, or an image too small, too flat, or unreadable as pixels)\n');
    const json = jsonLines((await optmarkWith({ OPTMARK_DATA_DIR: data }, 'verify', '--json', 'flat.png')).stdout)[0]!;
    expect(json.fingerprint).toEqual({ present: false, confidence: 0, blocks: 0 });
  });

  it('exits 1 for a file it cannot read', async () => {
    const run = await optmark('verify', 'missing.jpg');
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('missing.jpg: cannot read the file: no such file\n');
  });
});

describe('provenance on the command line', () => {
  it('protect signs with the local key ring, verify checks it, and a rotation keeps old tags valid', async () => {
    await optmark('protect', '--out', 'signed', 'hopper.webp');
    const first = jsonLines((await optmark('verify', '--json', 'signed/hopper-optout.webp')).stdout)[0]!;
    expect(first.provenance).toEqual({ present: true, valid: true, verifiable: true });
    expect((await optmark('verify', 'signed/hopper-optout.webp')).stdout).toContain('provenance tag: valid');

    const rotated = jsonLines((await optmark('signing-keys', 'rotate', '--json')).stdout)[0]!;
    const keys = jsonLines((await optmark('signing-keys', 'list', '--json')).stdout)[0] as unknown as Array<{ kid: string; active: boolean }>;
    expect(keys.map((k) => k.active)).toEqual([false, true]);
    expect(keys[1]!.kid).toBe(rotated.kid);
    const again = jsonLines((await optmark('verify', '--json', 'signed/hopper-optout.webp')).stdout)[0]!;
    expect(again.provenance).toEqual({ present: true, valid: true, verifiable: true });
  });

  it("another deployment's tags are present but not verifiable, until its JWKS is given", async () => {
    const other = { OPTMARK_DATA_DIR: join(dir, 'other-deployment') };
    await optmarkWith(other, 'protect', '--out', 'theirs', 'photo.jpg');
    const local = jsonLines((await optmark('verify', '--json', 'theirs/photo-optout.jpg')).stdout)[0]!;
    expect(local.provenance).toEqual({ present: true, valid: false, verifiable: false });
    const { SigningKeys } = await import('../../src/adapters/signing-keys.js');
    await writeFile(join(dir, 'their-jwks.json'), JSON.stringify(SigningKeys.open(join(dir, 'other-deployment', 'signing-keys.json')).jwks()));
    const offline = jsonLines((await optmark('verify', '--json', '--jwks', 'their-jwks.json', 'theirs/photo-optout.jpg')).stdout)[0]!;
    expect(offline.provenance).toEqual({ present: true, valid: true, verifiable: true });
    const missing = await optmark('verify', '--jwks', 'nowhere.json', 'theirs/photo-optout.jpg');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot load the JWKS nowhere.json');
    // A JSON file that is not a JWKS, and a JWKS with a broken key: one clear line, no stack trace.
    await writeFile(join(dir, 'not-jwks.json'), '{}');
    await writeFile(join(dir, 'bad-key.json'), JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', kid: 'k', x: '!' }] }));
    for (const file of ['not-jwks.json', 'bad-key.json']) {
      const broken = await optmark('verify', '--jwks', file, 'theirs/photo-optout.jpg');
      expect(broken.code).toBe(1);
      expect(broken.stderr).toMatch(new RegExp(`^optmark: cannot load the JWKS ${file}: .+\n$`));
    }
  });
});

describe('optmark', () => {
  it('prints help, and refuses unknown commands', async () => {
    const help = await optmark('help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('optmark protect <file|folder...>');
    expect(help.stdout).toContain('optmark keys issue --account NAME');
    expect((await optmark('frob')).code).toBe(2);
    expect((await optmark('serve', 'extra')).code).toBe(2);
  });

  it('answers --help for each command group with its own usage', async () => {
    for (const group of ['protect', 'verify', 'serve', 'accounts', 'users', 'plans', 'keys', 'usage', 'signing-keys', 'fingerprint-keys', 'access', 'scan', 'scans', 'vault-key']) {
      const run = await optmark(group, '--help');
      expect(run.code, group).toBe(0);
      expect(run.stdout, group).toMatch(new RegExp(`^Usage:\n  optmark ${group}\\b`));
      // Only its own group.
      expect(run.stdout.match(/^ {2}optmark [a-z-]+/gm)!.every((line) => line === `  optmark ${group}`), group).toBe(true);
    }
    expect((await optmark('help', 'accounts')).stdout).toContain('optmark accounts delete NAME --yes');
  });

  it('answers every bad option or value with exit 2 and the command\'s usage', async () => {
    const cases: string[][] = [
      ['protect', '--concurrency', 'many', 'photo.jpg'],
      ['protect', '--report', 'out.txt', 'photo.jpg'],
      ['protect', '--in-place', '--out', 'x', 'photo.jpg'],
      ['verify', '--frobnicate', 'photo.jpg'],
      ['verify', '--concurrency', '0', 'photo.jpg'],
      ['accounts', 'set-limits', 'acme', '--protect', 'lots'],
      ['accounts', 'create', '--name', 'acme', '--plan', 'gold'],
      ['accounts', 'frobnicate'],
      ['keys', 'issue', '--account', 'acme', '--expires-in-days', 'soon'],
      ['keys', 'issue', 'acme', '--account', 'acme'],
      ['keys', 'revoke', 'key_a', 'key_b'],
      ['plans', 'set', 'pro', '--verify', '-1'],
      ['users', 'create', '--account', 'acme'],
      ['signing-keys', 'spin'],
    ];
    for (const args of cases) {
      const run = await optmarkWith({ OPTMARK_DATA_DIR: join(dir, 'no-such-data') }, ...args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(new RegExp(`^optmark: [^]+\nUsage:\n  optmark ${args[0]} `));
    }
  });
});

describe("the developer's environment", () => {
  it('was never seen by the commands: nothing was written where its settings point', async () => {
    expect(await readdir(developer)).toEqual([]);
  });
});
