/**
 * A path as optmark names it, from the bytes a git tree or a file system
 * holds: its UTF-8, or, for bytes that are not UTF-8 (an old Latin-1 or
 * Shift-JIS name), each byte of 0x80 and above as \xNN, with the bytes
 * kept to reach the file by. Decoding them would turn each bad byte into
 * U+FFFD: two names became one, and a pushed fix wrote a new file beside
 * the one scanned.
 */
export function pathOf(bytes: Buffer): { path: string; pathBytes?: Buffer } {
  const text = bytes.toString('utf8');
  if (Buffer.from(text, 'utf8').equals(bytes)) return { path: text };
  let path = '';
  for (const byte of bytes) path += byte < 0x80 ? String.fromCharCode(byte) : `\\x${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return { path, pathBytes: Buffer.from(bytes) };
}
