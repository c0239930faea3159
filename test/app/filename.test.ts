import { describe, expect, it } from 'vitest';
import { outputFilename } from '../../src/app/filename.js';

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
