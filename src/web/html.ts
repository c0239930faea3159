/**
 * HTML built from tagged templates in which every interpolated value is
 * escaped unless it is itself HTML made here: account names, file names and
 * messages come from users and must never become markup.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/**
 * `text` escaped, with a line-break opportunity (`<wbr>`) after each slash:
 * a repository URL or a path too long for a phone's width breaks where a
 * reader expects (`git://example.org:9418/` | `team/site.git`), not in the
 * middle of a host name or a word.
 */
export function breakable(text: string): Html {
  return new Html(escapeHtml(text).replace(/\//g, '/<wbr>'));
}
