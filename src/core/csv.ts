/**
 * One CSV field (RFC 4180): quoted, quotes doubled. A text a person or a
 * repository chose (a file name, an email, a path) that a spreadsheet would
 * take for a formula (=, +, -, @, a tab or a carriage return first) gets a
 * ' in front.
 */
export function csvField(value: string, typed = false): string {
  const safe = typed && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${safe.replace(/"/g, '""')}"`;
}
