import { describe, expect, it } from 'vitest';
import { keptName, outputFilename } from '../../src/app/filename.js';

describe('outputFilename', () => {
  it.each([
    ['photo.jpg', 'jpg', 'photo-optout.jpg'],
    ['photo.webp', 'webp', 'photo-optout.webp'],
    ['Holiday Photo (1).JPEG', 'jpg', 'Holiday-Photo-1-optout.jpg'],
    ['../../etc/passwd', 'png', 'passwd-optout.png'],
    ['C:\\Users\\me\\Pictures\\cat.png', 'png', 'cat-optout.png'],
    ['<img src=x onerror=alert(1)>.png', 'png', 'img-src-x-onerror-alert-1-optout.png'],
    ['café.jpg', 'jpg', 'café-optout.jpg'],
    ['archive.tar.gz', 'jpg', 'archive-tar-optout.jpg'],
    ['.hidden', 'png', 'hidden-optout.png'],
    ['photo-optout.jpg', 'jpg', 'photo-optout.jpg'],
    ['', 'jpg', 'image-optout.jpg'],
    [undefined, 'png', 'image-optout.png'],
    ['...', 'webp', 'image-optout.webp'],
    ['a\u0000b\r\nc.jpg', 'jpg', 'a-b-c-optout.jpg'],
  ])('%j -> %s', (input, extension, expected) => {
    expect(outputFilename(input, extension)).toBe(expected);
  });

  it('caps the stem at 100 characters', () => {
    expect(outputFilename(`${'x'.repeat(10_000)}.png`, 'png')).toBe(`${'x'.repeat(100)}-optout.png`);
  });
});

describe('keptName: a name as records and the vault keep it', () => {
  it('drops control characters, keeps every other character as given', () => {
    expect(keptName('Harbour\u0000\u0007\u001b\u007f\u0085 at dawn — été.jpg')).toBe('Harbour at dawn — été.jpg');
    expect(keptName('photos/2024/a\\b.png')).toBe('photos/2024/a\\b.png');
  });

  it('cuts a name over 1,024 characters (counted as PostgreSQL counts them) in its middle, keeping its end', () => {
    const path = `${'deep/'.repeat(300)}${'😀'.repeat(50)}photo.png`;
    const kept = keptName(path);
    expect(Array.from(kept)).toHaveLength(1024);
    expect(kept.startsWith('deep/deep/')).toBe(true);
    expect(kept.endsWith('😀😀😀😀😀😀photo.png')).toBe(true);
    expect(kept).toContain('…');
    expect(kept.isWellFormed()).toBe(true);
    expect(keptName('a'.repeat(1024))).toBe('a'.repeat(1024));
  });

  it('makes a lone surrogate a replacement character', () => {
    expect(keptName('a\ud800b.jpg')).toBe('a\ufffdb.jpg');
  });
});
