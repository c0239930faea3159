/**
 * Every error optmark raises on purpose, each with a stable snake_case `code`.
 *
 * These classes carry data and a readable message, never an HTTP status: the
 * one place that maps codes to statuses is the HTTP error handler. A failure
 * that is not one of these is a bug.
 */

export type ImageFormat = 'jpeg' | 'png' | 'webp';

export type ErrorCode =
  // the image
  | 'empty_image'
  | 'unsupported_image_format'
  | 'corrupt_image'
  | 'image_dimensions_too_large'
  | 'fingerprint_not_possible'
  | 'invalid_xmp'
  | 'ambiguous_xmp'
  | 'conflicting_xmp'
  | 'invalid_option'
  // the request
  | 'malformed_request'
  | 'missing_image_part'
  | 'multiple_parts'
  | 'image_too_large'
  | 'body_too_large'
  | 'unsupported_content_type'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'header_too_large'
  // the caller
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'plan_not_allowed'
  | 'scope_not_allowed'
  | 'not_signed_in'
  | 'invalid_credentials'
  | 'link_not_valid'
  | 'password_not_accepted'
  | 'cross_site_request'
  | 'role_not_allowed'
  | 'batch_full'
  | 'batch_not_found'
  | 'idempotency_key_reused'
  | 'access_request_exists'
  | 'access_request_not_found'
  | 'access_request_not_pending'
  | 'grant_not_available'
  | 'invalid_sha256'
  | 'record_not_found'
  | 'scan_not_found'
  | 'scan_not_cancellable'
  | 'scan_not_finished'
  | 'repository_unavailable'
  | 'source_not_allowed'
  | 'scan_limit_reached'
  | 'scans_paused'
  | 'vault_file_not_found'
  | 'vault_file_unreadable'
  | 'quota_exceeded'
  | 'too_many_requests'
  | 'too_many_failed_calls'
  // administration
  | 'account_exists'
  | 'account_not_found'
  | 'user_exists'
  | 'user_not_found'
  | 'key_not_found'
  | 'too_many_keys'
  // the service
  | 'service_unavailable'
  | 'server_busy'
  | 'internal_error';

export abstract class OptmarkError extends Error {
  abstract readonly code: ErrorCode;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The input has no bytes at all. */
export class EmptyImageError extends OptmarkError {
  readonly code = 'empty_image';
  constructor() {
    super('The image is empty (0 bytes)');
  }
}

/** The bytes are not JPEG, PNG or WebP. `detected` names what they look like, when known. */
export class UnsupportedFormatError extends OptmarkError {
  readonly code = 'unsupported_image_format';
  constructor(readonly detected?: string) {
    super(
      detected
        ? `${detected} is not supported: send a JPEG, PNG or WebP image`
        : 'The file is not a JPEG, PNG or WebP image (judged by its bytes, not its name or declared type)',
    );
  }
}

/** The container is broken: truncated, a length that lies, a bad checksum, a missing required part. */
export class CorruptImageError extends OptmarkError {
  readonly code = 'corrupt_image';
  constructor(
    readonly format: ImageFormat,
    readonly reason: string,
  ) {
    super(`Corrupt ${FORMAT_NAMES[format]}: ${reason}`);
  }
}

/**
 * The image declares more pixels than protect and verify take
 * (OPTMARK_MAX_IMAGE_PIXELS), or than the pixel decoder takes (OPTMARK_MAX_PIXELS):
 * checked from its header, before any decoding.
 */
export class ImageDimensionsTooLargeError extends OptmarkError {
  readonly code = 'image_dimensions_too_large';
  constructor(
    readonly width: number,
    readonly height: number,
    readonly limit: number,
  ) {
    super(`The image is ${width}x${height} pixels, over the limit of ${limit} pixels`);
  }
}

/** The image cannot carry the in-pixel fingerprint (too small, CMYK, 16-bit, animated, ...); `reason` says which. */
export class FingerprintNotPossibleError extends OptmarkError {
  readonly code = 'fingerprint_not_possible';
  constructor(readonly reason: string) {
    super(`This image cannot be fingerprinted: ${reason}`);
  }
}

/** The XMP metadata is malformed or hostile (DTD, too deep, too large, bad Extended XMP). */
export class InvalidXmpError extends OptmarkError {
  readonly code = 'invalid_xmp';
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Invalid XMP metadata: ${reason}`, options);
  }
}

/** The file carries more than one standard XMP packet; writing into it would have to pick one. */
export class AmbiguousXmpError extends OptmarkError {
  readonly code = 'ambiguous_xmp';
  constructor(
    readonly format: ImageFormat,
    readonly count: number,
  ) {
    super(
      `The ${FORMAT_NAMES[format]} carries ${count} XMP packets where there must be one; ` +
        'refusing to guess which one to change',
    );
  }
}

/**
 * The XMP repeats a property (or a struct's field) with different values.
 * Adobe's XMP Toolkit throws such a packet away whole, so protect removes
 * exact repeats; where they disagree, it cannot tell which value is meant.
 */
export class ConflictingXmpError extends OptmarkError {
  readonly code = 'conflicting_xmp';
  constructor(readonly conflicts: ReadonlyArray<{ readonly path: string; readonly values: readonly string[] }>) {
    const shown = conflicts.slice(0, 5).map((c) => `${c.path} (${c.values.join(', ')})`);
    super(
      `The XMP repeats ${shown.join('; ')}${conflicts.length > 5 ? ` and ${conflicts.length - 5} more` : ''} with different values. ` +
        "Adobe's XMP Toolkit (in exiv2, exempi and Adobe's applications) throws away a packet that repeats a property, " +
        'and which value is meant cannot be told; remove the one that is wrong, then mark the file',
    );
  }
}

/** A caller passed an option outside its domain. Message shape: "Expected X for name but received Y". */
export class InvalidOptionError extends OptmarkError {
  readonly code = 'invalid_option';
  constructor(
    readonly option: string,
    readonly expected: string,
    readonly actual: unknown,
    /** A message in words, where the generic "Expected ... but received ..." would not read well. */
    message?: string,
  ) {
    super(message ?? `Expected ${expected} for ${option} but received ${describe(actual)}`);
  }
}

/** The HTTP request itself is not what the endpoint takes (see `code` for which way). */
export class RequestError extends OptmarkError {
  constructor(
    readonly code: 'malformed_request' | 'missing_image_part' | 'multiple_parts' | 'unsupported_content_type' | 'not_found' | 'request_timeout' | 'header_too_large' | 'body_too_large',
    message: string,
  ) {
    super(message);
  }
}

/** The path exists, the method does not; `allow` lists the methods it takes. */
export class MethodNotAllowedError extends OptmarkError {
  readonly code = 'method_not_allowed';
  constructor(
    method: string,
    readonly allow: string,
  ) {
    super(`${method} is not allowed here; use ${allow}`);
  }
}

/** The upload is over the size limit. */
export class ImageTooLargeError extends OptmarkError {
  readonly code = 'image_too_large';
  constructor(readonly limit: number) {
    // In the units people read (1 MB = 1,048,576 bytes, as the pages count), and the exact bytes.
    super(`The image is larger than the limit of ${Number((limit / 1024 ** 2).toFixed(1))} MB (${limit} bytes)`);
  }
}

/** No bearer key was sent. */
export class MissingApiKeyError extends OptmarkError {
  readonly code = 'missing_api_key';
  constructor() {
    super('Send your API key as "Authorization: Bearer <key>"');
  }
}

/**
 * The key is malformed, unknown, revoked or expired. One message for all
 * four, on purpose: a caller learns nothing about which keys exist.
 */
export class InvalidApiKeyError extends OptmarkError {
  readonly code = 'invalid_api_key';
  constructor() {
    super('The API key is not valid');
  }
}

/** The account's plan does not include the API (nor the dashboard, its other face). */
export class PlanNotAllowedError extends OptmarkError {
  readonly code = 'plan_not_allowed';
  constructor(readonly plan: string) {
    super(`The ${plan} plan does not include API access; the API and the dashboard are available on the Pro and Lifetime plans`);
  }
}

/** A dashboard action without a live session: never signed in, signed out, expired, or its key revoked. */
/** The key's scopes do not include the operation called (a verify-only key calling protect). */
export class ScopeNotAllowedError extends OptmarkError {
  readonly code = 'scope_not_allowed';
  constructor(
    readonly operation: string,
    readonly scopes: readonly string[],
  ) {
    super(`This API key may not call ${operation}: its scopes are ${scopes.join(', ')}. Ask the account's owner for a key with the ${operation} scope`);
  }
}

/** The browser batch holds its 25 files already: a 26th distinct one is refused. */
export class BatchFullError extends OptmarkError {
  readonly code = 'batch_full';
  constructor(readonly limit: number) {
    super(`This batch holds ${limit} images already, the most a batch takes: start a new batch for more`);
  }
}

/** No live batch of this account has that id (never made, another account's, or older than 24 hours). */
export class BatchNotFoundError extends OptmarkError {
  readonly code = 'batch_not_found';
  constructor() {
    super('This batch does not exist or has expired (a batch lasts 24 hours): start a new one');
  }
}

/** The Idempotency-Key was used already with another image or other options (or its first call is still running). */
export class IdempotencyKeyReusedError extends OptmarkError {
  readonly code = 'idempotency_key_reused';
  constructor(message = 'This Idempotency-Key was used with another image or other options within the last 24 hours: use a new key for a new call') {
    super(message);
  }
}

/** The account has a pending request for API access under this integration name already. */
export class AccessRequestExistsError extends OptmarkError {
  readonly code = 'access_request_exists';
  constructor(readonly integration: string) {
    super(`Your account has a pending request for ${JSON.stringify(integration)} already: wait for the team's decision, or withdraw it first`);
  }
}

/** No such request for API access, or one of another account (the same answer). */
export class AccessRequestNotFoundError extends OptmarkError {
  readonly code = 'access_request_not_found';
  constructor() {
    super('There is no such request for API access in your account');
  }
}

/** The request was decided or withdrawn already. */
export class AccessRequestNotPendingError extends OptmarkError {
  readonly code = 'access_request_not_pending';
  constructor(readonly state: string) {
    super(`This request is ${state} already: only a pending request can be decided or withdrawn`);
  }
}

/** An approved grant whose key was revealed already, or which lapsed (not revealed within 14 days). */
export class GrantNotAvailableError extends OptmarkError {
  readonly code = 'grant_not_available';
  constructor(readonly state: string | null) {
    super(
      state === 'revealed'
        ? 'This key was revealed already: a key is shown once. If it was not stored, roll it to get a new one'
        : state === 'lapsed'
          ? 'This approval lapsed: its key was not revealed within 14 days. Request access again'
          : 'This request has no key to reveal (it is not approved)',
    );
  }
}

/** A SHA-256 asked for (a record's lookup) is not 64 hexadecimal characters. */
export class InvalidSha256Error extends OptmarkError {
  readonly code = 'invalid_sha256';
  constructor(given: string) {
    super(`A SHA-256 is 64 hexadecimal characters; this is not one: ${JSON.stringify(given.length > 80 ? `${given.slice(0, 80)}…` : given)}`);
  }
}

/** No service record of the account has that hash or id (one of another account is not found either: the same answer). */
export class RecordNotFoundError extends OptmarkError {
  readonly code = 'record_not_found';
  constructor(message = 'There is no service record for this in your account') {
    super(message);
  }
}

/** A file of the Private Vault that is not there, or not the person's to see (one answer for both). */
export class VaultFileNotFoundError extends OptmarkError {
  readonly code = 'vault_file_not_found';
  constructor(message = 'There is no such file in your vault') {
    super(message);
  }
}

/**
 * A file of the Private Vault whose stored bytes cannot be opened: changed or
 * cut in the storage, or sealed under a vault key the key file no longer
 * has. Not the person's doing, nor a bug: the operators' storage or keys.
 */
export class VaultFileUnreadableError extends OptmarkError {
  readonly code = 'vault_file_unreadable';
  constructor(why: string) {
    super(`This file of your vault cannot be opened: ${why}. Nothing was changed; the service's operators are told, and can restore it from their backups`);
  }
}

/** A signed-in person whose role does not allow the action (a member managing members, someone not an operator). */
export class RoleNotAllowedError extends OptmarkError {
  readonly code = 'role_not_allowed';
}

export class NotSignedInError extends OptmarkError {
  readonly code = 'not_signed_in';
  constructor() {
    super('You are not signed in (or your session has ended): sign in again');
  }
}

/** A dashboard form that did not come from the dashboard's own page (another site's page, a stale form). */
export class CrossSiteRequestError extends OptmarkError {
  readonly code = 'cross_site_request';
  constructor() {
    super('This request did not come from this site\'s own page (or the page is too old): reload the page and try again');
  }
}

/** No repository scan of the account has that id (one of another account is not found either: the same answer). */
export class ScanNotFoundError extends OptmarkError {
  readonly code = 'scan_not_found';
  constructor() {
    super('There is no repository scan with this id in your account');
  }
}

/** A scan that has ended (done, failed or cancelled) cannot be cancelled. */
export class ScanNotCancellableError extends OptmarkError {
  readonly code = 'scan_not_cancellable';
  constructor(readonly state: string) {
    super(`This scan has ended (${state}): there is nothing left to cancel`);
  }
}

/** A scan's fix before the scan has ended with a report (queued or running), or of a scan cancelled. */
export class ScanNotFinishedError extends OptmarkError {
  readonly code = 'scan_not_finished';
  constructor(readonly state: string) {
    super(state === 'cancelled' ? 'This scan was cancelled: scan the repository again, then fix it' : `This scan is ${state}: its fix can be made once it has ended`);
  }
}

/** The repository could not be fetched (again) from its server: gone, the token refused, a limit passed. */
export class RepositoryUnavailableError extends OptmarkError {
  readonly code = 'repository_unavailable';
  constructor(reason: string, message = `The repository could not be fetched: ${reason}`) {
    super(message);
  }
}

/** A fix stopped at the scans' time limit (OPTMARK_SCAN_MAX_SECONDS): no files come back and its units are given back. */
export class FixTimeLimitError extends RepositoryUnavailableError {
  constructor(maxSeconds: number, pushing: boolean) {
    super(
      'time limit',
      `The fix took longer than its limit of ${maxSeconds} s and was stopped: no call of the month was counted` +
        (pushing ? '; a branch being pushed at that moment may still have reached the repository' : ''),
    );
  }
}

/** A repository this deployment does not scan: not under an allowed source (OPTMARK_SCAN_SOURCES), a private address, credentials in the URL. */
export class SourceNotAllowedError extends OptmarkError {
  readonly code = 'source_not_allowed';
  constructor(reason: string) {
    super(`This repository cannot be scanned here: ${reason}`);
  }
}

/** The person has started as many repository scans today (UTC) as their plan allows. */
export class ScanLimitReachedError extends OptmarkError {
  readonly code = 'scan_limit_reached';
  constructor(
    readonly limit: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`You have started ${limit} repository scan${limit === 1 ? '' : 's'} today, your daily limit; you can start more after midnight UTC`);
  }
}

/**
 * New repository scans are paused for everyone: the service-wide ceiling of
 * the day is reached, or operators paused them. Temporary; not about this
 * account. Scans already running finish.
 */
export class ScansPausedError extends OptmarkError {
  readonly code = 'scans_paused';
  constructor(
    readonly reason: 'ceiling' | 'paused',
    readonly retryAfterSeconds: number,
  ) {
    super(
      reason === 'ceiling'
        ? 'New repository scans are paused for everyone for the rest of the day (UTC): the service-wide daily ceiling is reached. This is temporary and not about your account; scans already running finish.'
        : 'New repository scans are paused for everyone by the service\'s operators for a while. This is temporary and not about your account; scans already running finish.',
    );
  }
}

export type Operation = 'protect' | 'verify';

/** The account has used its monthly allowance for this operation. */
export class QuotaExceededError extends OptmarkError {
  readonly code = 'quota_exceeded';
  /**
   * @param held units of the limit that calls still running hold: said, since
   *   each comes back if its call fails (the limit looks reached before the
   *   count shows it).
   */
  constructor(
    readonly operation: Operation,
    readonly limit: number,
    readonly resetsAt: Date,
    readonly held = 0,
  ) {
    super(
      `The monthly ${operation} limit of ${limit} calls is reached${held > 0 ? `, ${held} of them by calls still running (a call that fails gives its unit back)` : ''}; it resets at ${resetsAt.toISOString()}`,
    );
  }
}

/** Administration: the named thing does not exist, or already does. */
/**
 * A sign-in that does not hold: an unknown email, a wrong password and a
 * disabled user get this same error (and take the same time), so that the
 * answer tells nothing about which emails have accounts.
 */
export class InvalidCredentialsError extends OptmarkError {
  readonly code = 'invalid_credentials';
  constructor(message = 'The email or the password is not right') {
    super(message);
  }
}

/** A one-time link that is unknown, used already or expired (one answer for all three). */
export class LinkNotValidError extends OptmarkError {
  readonly code = 'link_not_valid';
  constructor() {
    super('This link is not valid any more: it has been used or has expired. Ask for a new one.');
  }
}

/** A new password that does not meet the rules (`reason` says which, in words). */
export class PasswordNotAcceptedError extends OptmarkError {
  readonly code = 'password_not_accepted';
  constructor(readonly reason: string) {
    super(`That password cannot be used: ${reason}`);
  }
}

export class AdminError extends OptmarkError {
  constructor(
    readonly code: 'account_exists' | 'account_not_found' | 'user_exists' | 'user_not_found' | 'key_not_found' | 'too_many_keys',
    message: string,
  ) {
    super(message);
  }
}

/** The database cannot be reached or written, or the server is over capacity. Try again later. */
export class ServiceUnavailableError extends OptmarkError {
  readonly code = 'service_unavailable';
  constructor(
    message = 'The service is temporarily unavailable; try again shortly',
    readonly retryAfterSeconds = 5,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The same key already has as many calls in flight as it may, or its
 * account has its share of them while other accounts wait for one
 * (app/admission.ts); one of them must finish first.
 */
export class TooManyRequestsError extends OptmarkError {
  readonly code = 'too_many_requests';
  readonly retryAfterSeconds = 1;
  constructor(
    readonly limit: number,
    readonly scope: 'key' | 'account' = 'key',
  ) {
    super(
      scope === 'key'
        ? `This API key already has ${limit} calls in progress; wait for one to finish`
        : `This account already has ${limit} calls in progress while other accounts wait for one; wait for one of yours to finish`,
    );
  }
}

/**
 * The client's address presented too many invalid API keys within the
 * window; every request with a key is refused until the window ends, valid
 * keys included (a different answer would tell a right guess from a wrong one).
 */
export class TooManyAuthFailuresError extends OptmarkError {
  readonly code = 'too_many_requests';
  constructor(
    readonly limit: number,
    readonly windowSeconds: number,
    readonly retryAfterSeconds: number,
  ) {
    super(
      `Too many requests from your address had an invalid API key (${limit} within ${windowSeconds} seconds); ` +
        `requests with an API key from it are refused for the next ${retryAfterSeconds} seconds`,
    );
  }
}

/** Too many failed sign-ins from this address, or for this email from it: wait `retryAfterSeconds`. */
export class TooManySignInsError extends OptmarkError {
  readonly code = 'too_many_requests';
  constructor(readonly retryAfterSeconds: number) {
    super(`Too many sign-ins that did not hold; wait ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'} before trying again`);
  }
}

/** An account's invitations of the last hour are used up (app/people/invite-limits.ts). */
export class TooManyInvitationsError extends OptmarkError {
  readonly code = 'too_many_requests';
  constructor(
    perHour: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`This account has sent ${perHour} invitations in the last hour, the most an hour allows; try again in ${Math.ceil(retryAfterSeconds / 60)} minute${Math.ceil(retryAfterSeconds / 60) === 1 ? '' : 's'}`);
  }
}

/**
 * The account's calls that failed after their upload was processed, or
 * whose client left before the answer, have used its budget of such work
 * for the window (OPTMARK_FAILED_WORK_SECONDS per minute, app/failed-work.ts);
 * its calls are refused until the window ends.
 */
export class TooManyFailedCallsError extends OptmarkError {
  readonly code = 'too_many_failed_calls';
  constructor(
    readonly budgetSeconds: number,
    readonly windowSeconds: number,
    readonly retryAfterSeconds: number,
  ) {
    super(
      `This account's calls that failed or were given up after their upload took ${budgetSeconds} s of processing within ${windowSeconds} seconds; ` +
        `its calls are refused for the next ${retryAfterSeconds} seconds`,
    );
  }
}

/** The server is at capacity (calls in flight, or decodes queued); shed now rather than run out of memory. */
export class ServerBusyError extends OptmarkError {
  readonly code = 'server_busy';
  readonly retryAfterSeconds = 1;
  constructor(what = 'calls', message = `The server is at capacity (${what}); try again in a moment`) {
    super(message);
  }
}

/**
 * One of these errors raised on a worker thread, as the calling thread sees
 * it: its code and its message (an error's class does not survive the trip
 * between threads).
 */
export class RelayedError extends OptmarkError {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const FORMAT_NAMES: Readonly<Record<ImageFormat, string>> = {
  jpeg: 'JPEG',
  png: 'PNG',
  webp: 'WebP',
};

function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  const short = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return `${short} of type ${typeof value}`;
}

export function isOptmarkError(error: unknown): error is OptmarkError {
  return error instanceof OptmarkError;
}
