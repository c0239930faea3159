/**
 * Exact tail of the fair-coin binomial distribution, the verdict's test.
 * Computed from the probability mass function by the ratio recurrence
 * P(i - 1) = P(i) * i / (n - i + 1), starting at P(n) = 2^-n: every term is a
 * product of exact ratios, so the relative error stays near 1e-15 for the
 * block counts used here (2^-n is representable down to n = 1074).
 */

const MAX_N = 1000;

/** P[Binomial(n, 1/2) >= k]. */
export function binomialUpperTail(n: number, k: number): number {
  checkN(n);
  if (!Number.isInteger(k)) throw new RangeError(`k must be an integer, got ${k}`);
  if (k <= 0) return 1;
  if (k > n) return 0;
  let term = 2 ** -n; // P(X = n)
  let tail = term;
  for (let i = n; i > k; i--) {
    term = (term * i) / (n - i + 1); // P(X = i - 1)
    tail += term;
  }
  return Math.min(1, tail);
}

/**
 * The smallest k with P[Binomial(n, 1/2) >= k] <= alpha, or n + 1 when no
 * count reaches it (for alpha = 1e-6 that is every n below 20, as 2^-20 is
 * 9.5e-7).
 */
export function criticalMatches(n: number, alpha: number): number {
  checkN(n);
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
  let term = 2 ** -n;
  let tail = term;
  if (tail > alpha) return n + 1;
  for (let k = n; k > 0; k--) {
    const next = (term * k) / (n - k + 1); // P(X = k - 1)
    if (tail + next > alpha) return k;
    term = next;
    tail += next;
  }
  return 0;
}

function checkN(n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > MAX_N) throw new RangeError(`n must be an integer in [0, ${MAX_N}], got ${n}`);
}
