/**
 * RateLimit-Policy and RateLimit response fields, as in
 * draft-ietf-httpapi-ratelimit-headers-11 (May 2026): one quota policy per
 * operation, named "protect" or "verify", with the monthly quota (q) and the
 * length of this calendar month in seconds (w); and the remaining allowance
 * (r) with the seconds until it resets (t).
 */
import type { FastifyReply } from 'fastify';
import type { Operation } from '../errors.js';
import { periodOf, secondsUntil } from '../core/quota/period.js';

export interface Allowance {
  readonly operation: Operation;
  readonly limit: number;
  readonly remaining: number;
}

export function setRateLimitHeaders(reply: FastifyReply, allowances: readonly Allowance[], now: Date): void {
  const period = periodOf(now);
  const window = Math.round((period.end.getTime() - period.start.getTime()) / 1000);
  const reset = secondsUntil(period.end, now);
  reply.header('RateLimit-Policy', allowances.map((a) => `"${a.operation}";q=${a.limit};w=${window}`).join(', '));
  reply.header('RateLimit', allowances.map((a) => `"${a.operation}";r=${Math.max(0, a.remaining)};t=${reset}`).join(', '));
}
