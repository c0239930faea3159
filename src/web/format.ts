/**
 * Numbers, sizes and dates for the reader's locale (the first of the
 * request's Accept-Language that Intl knows; English otherwise), with
 * Node's full ICU: "12,345" for one reader is "12.345" for another.
 */
export interface Format {
  readonly locale: string;
  number(n: number): string;
  /** Bytes as people read them: 31 MB, 640 KB, 900 bytes (units of 1,024, as the upload limit is stated: 25 MB = 26,214,400 bytes). */
  bytes(n: number): string;
  /** A date and time in UTC, with the zone said. */
  dateTime(date: Date | string): string;
  date(date: Date | string): string;
}

export function localeOf(acceptLanguage: string | undefined): string {
  for (const part of (acceptLanguage ?? '').split(',')) {
    const tag = part.split(';')[0]!.trim();
    if (!tag || tag === '*') continue;
    try {
      const [supported] = Intl.NumberFormat.supportedLocalesOf([tag]);
      if (supported) return supported;
    } catch {
      // not a language tag
    }
  }
  return 'en';
}

export function formatFor(locale: string): Format {
  const number = new Intl.NumberFormat(locale);
  const oneDecimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 });
  const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
  const date = new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeZone: 'UTC' });
  return {
    locale,
    number: (n) => number.format(n),
    bytes(n) {
      if (n < 1024) return `${number.format(n)} bytes`;
      if (n < 1024 ** 2) return `${oneDecimal.format(n / 1024)} KB`;
      if (n < 1024 ** 3) return `${oneDecimal.format(n / 1024 ** 2)} MB`;
      return `${oneDecimal.format(n / 1024 ** 3)} GB`;
    },
    dateTime: (d) => `${dateTime.format(new Date(d))} UTC`,
    date: (d) => date.format(new Date(d)),
  };
}
