/**
 * `optmark verify --jwks URL`: another deployment's public keys, fetched
 * the way a tool that may run inside a private network must fetch a URL it
 * was handed:
 *
 * - only http and https, and no redirect is followed (a redirect is the
 *   classic way to point a fetch at an internal address);
 * - the host's addresses are checked where the connection is made (the
 *   request's own DNS lookup, so a name cannot resolve one way for a check
 *   and another for the connection): loopback, private, link-local (cloud
 *   metadata services live there), unique-local and every other range that
 *   is not public unicast are refused unless `allowPrivate` (the CLI's
 *   --allow-private) says the operator means it;
 * - at most MAX_JWKS_BYTES are read (a declared length over it is refused
 *   before reading), and the whole fetch has TIMEOUT_MS;
 * - no error repeats what the server sent: a message names the URL and what
 *   went wrong, never the answer's bytes.
 */
import { lookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

/** A JWKS of a few keys is a few KB; a megabyte is far beyond any real one. */
export const MAX_JWKS_BYTES = 1024 * 1024;
/** The whole fetch: connection, answer and body. */
export const TIMEOUT_MS = 10_000;

export class JwksFetchError extends Error {}

/** Why `address` may not be fetched from without --allow-private, or undefined when it is public. */
export function nonPublicRange(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  const range = ipaddr.process(address).range(); // IPv4-mapped IPv6 is judged as IPv4
  return range === 'unicast' ? undefined : range;
}

function refusal(host: string, address: string, range: string): JwksFetchError {
  return new JwksFetchError(`${host} is at ${address}, a ${range} address; pass --allow-private to fetch from a private or local network`);
}

/** The system's lookup, refusing any address that is not public unless allowed. */
function checkedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      if (!allowPrivate) {
        for (const { address } of addresses) {
          const range = nonPublicRange(address);
          if (range) return callback(refusal(hostname, address, range) as NodeJS.ErrnoException, '', 0);
        }
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}

/** The JWKS document at `url`, parsed; JwksFetchError for every way it cannot be had. */
export async function fetchJwks(url: string, options: { allowPrivate: boolean }): Promise<unknown> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new JwksFetchError('it is not a URL');
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new JwksFetchError('only http:// and https:// URLs are fetched');
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !options.allowPrivate) {
    const range = nonPublicRange(host);
    if (range) throw refusal(host, host, range);
  }
  const text = await new Promise<string>((resolve, reject) => {
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, { method: 'GET', headers: { Accept: 'application/json' }, lookup: checkedLookup(options.allowPrivate) }, (response) => {
      read(response).then(resolve, reject);
    });
    const timer = setTimeout(() => req.destroy(new JwksFetchError(`no complete answer within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
    req.once('close', () => clearTimeout(timer));
    req.once('error', (error) => reject(error instanceof JwksFetchError ? error : new JwksFetchError(describeNetworkError(error))));
    req.end();

    async function read(response: IncomingMessage): Promise<string> {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        response.resume();
        throw new JwksFetchError(`it answered with a redirect (HTTP ${status}), which is not followed: give the address it redirects to`);
      }
      if (status !== 200) {
        response.resume();
        throw new JwksFetchError(`it answered HTTP ${status}`);
      }
      const declared = Number(response.headers['content-length']);
      if (Number.isFinite(declared) && declared > MAX_JWKS_BYTES) {
        req.destroy();
        throw new JwksFetchError(`its answer is ${declared} bytes, more than the ${MAX_JWKS_BYTES} a JWKS may have`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_JWKS_BYTES) {
          req.destroy();
          throw new JwksFetchError(`its answer is more than the ${MAX_JWKS_BYTES} bytes a JWKS may have`);
        }
        chunks.push(chunk);
      }
      return Buffer.concat(chunks).toString('utf8');
    }
  });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // JSON.parse's message quotes the text: not repeated, as it is whatever the server sent.
    throw new JwksFetchError('its answer is not JSON');
  }
}

/** A network failure in words that do not carry anything the server sent. */
function describeNetworkError(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code ? `the connection failed (${code})` : `the connection failed (${error.message})`;
}
