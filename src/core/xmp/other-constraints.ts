/**
 * The text DMI-PROHIBITED-SEECONSTRAINT ("Prohibited, see
 * plus:OtherConstraints") points to. PLUS LDF gives plus:OtherConstraints
 * as a Lang Alt of text; optmark writes the x-default item. The value needs
 * the text, and the text goes with that value only: a file that says "see
 * plus:OtherConstraints" with nothing to see, or constraints no value points
 * to, would tell its readers nothing sure.
 */
import { InvalidOptionError } from '../../errors.js';
import { DATA_MINING_LABELS, DMI_VOCAB_PREFIX } from './vocabulary.js';

export const SEE_CONSTRAINT = 'DMI-PROHIBITED-SEECONSTRAINT';

/** Characters (Unicode code points) the text may have at most. */
export const MAX_OTHER_CONSTRAINTS_CHARACTERS = 1000;

/**
 * What the text may not hold: control characters (C0, DEL and C1, line
 * breaks and tabs included: it is one line of text, and XML 1.0 cannot carry
 * most of them at all) and U+FFFE and U+FFFF, which are not XML characters.
 */
const FORBIDDEN = /[\p{Cc}\uFFFE\uFFFF]/u;

const OPTION = 'otherConstraints';
const SEE_WORDS = `"${DATA_MINING_LABELS[SEE_CONSTRAINT]}" (${SEE_CONSTRAINT})`;

/**
 * The text to write as plus:OtherConstraints with the Data Mining `value`
 * (a DMI code or its vocabulary URI; undefined when none was asked for), its
 * surrounding whitespace removed; undefined when there is none to write.
 * An empty or blank text counts as none.
 *
 * @throws InvalidOptionError when `value` is DMI-PROHIBITED-SEECONSTRAINT
 *   and there is no text, when there is a text and another value (or none),
 *   or when the text is longer than MAX_OTHER_CONSTRAINTS_CHARACTERS or holds
 *   a character it may not.
 */
export function checkOtherConstraints(value: string | undefined, text: string | undefined): string | undefined {
  const code = value?.startsWith(DMI_VOCAB_PREFIX) ? value.slice(DMI_VOCAB_PREFIX.length) : value;
  const trimmed = text?.trim();
  if (trimmed === undefined || trimmed === '') {
    if (code !== SEE_CONSTRAINT) return undefined;
    throw new InvalidOptionError(
      OPTION,
      'the constraints text',
      text,
      `${SEE_WORDS} needs a text: the constraints it points to, written into plus:OtherConstraints (otherConstraints, 1 to ${MAX_OTHER_CONSTRAINTS_CHARACTERS} characters)`,
    );
  }
  if (code !== SEE_CONSTRAINT) {
    throw new InvalidOptionError(
      OPTION,
      `the value ${SEE_CONSTRAINT}`,
      code,
      `The constraints text (otherConstraints) is written only with ${SEE_WORDS}; ${code === undefined ? 'no value' : code} was asked for. Choose that value, or leave the text out`,
    );
  }
  if (!trimmed.isWellFormed()) {
    throw new InvalidOptionError(OPTION, 'text', text, 'The constraints text (otherConstraints) is not valid Unicode text (it has a lone surrogate)');
  }
  const length = [...trimmed].length;
  if (length > MAX_OTHER_CONSTRAINTS_CHARACTERS) {
    throw new InvalidOptionError(
      OPTION,
      `at most ${MAX_OTHER_CONSTRAINTS_CHARACTERS} characters`,
      text,
      `The constraints text (otherConstraints) has ${length} characters; it may have ${MAX_OTHER_CONSTRAINTS_CHARACTERS} at most`,
    );
  }
  const forbidden = FORBIDDEN.exec(trimmed);
  if (forbidden) {
    const codePoint = forbidden[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw new InvalidOptionError(
      OPTION,
      'one line of text without control characters',
      text,
      `The constraints text (otherConstraints) holds the control character U+${codePoint}; it takes one line of text, without line breaks, tabs or other control characters`,
    );
  }
  return trimmed;
}
