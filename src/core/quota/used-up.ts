/**
 * The month's allowance used up, as the dashboard says it (the page script
 * and the server's page without JavaScript alike): "this month's markings
 * are used up; they start again on 1 December 2026". `day`: the date the
 * reader's locale writes; `perMonth`: the allowance, said when given.
 */
export function usedUpWords(operation: 'protect' | 'verify', day: string, perMonth?: number): string {
  return `this month's ${operation === 'protect' ? 'markings' : 'checks'} are used up${perMonth === undefined ? '' : ` (${perMonth} a month)`}; they start again on ${day}`;
}
