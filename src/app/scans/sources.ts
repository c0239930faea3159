/**
 * Which repositories a deployment scans (docs/scans.md "Sources"):
 *
 * - the URL starts with one of the allowed prefixes (OPTMARK_SCAN_SOURCES;
 *   default the public forges over https);
 * - no credentials in the URL (a read token goes in its own field, so that
 *   it is never stored with the scan), no query or fragment;
 * - file:// only under a listed directory, the real path (links resolved)
 *   included, so that a scan never reads the server's own files;
 * - a host name must resolve to public addresses only, and git is made to
 *   connect to the address checked (no second lookup to rebind); a private
 *   or loopback address is reached only when the prefix itself names it as
 *   an IP address (an operator's explicit choice);
 * - redirects are not followed (adapters/git).
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { SourceNotAllowedError } from '../../errors.js';

export interface CheckedSource {
  /** The URL to fetch, normalised. */
  readonly url: string;
  /** Connect to this address for the host ([host, port, address]); null for file://. */
  readonly pin: readonly [string, number, string] | null;
}

export interface SourcePorts {
  /** The host's addresses (A and AAAA). */
  resolve(host: string): Promise<string[]>;
  /** The path with every link resolved; rejects when it does not exist. */
  realpath(path: string): Promise<string>;
}

const DEFAULT_PORTS: Record<string, number> = { 'https:': 443, 'http:': 80, 'git:': 9418 };

export const isPublicAddress = (address: string): boolean => {
  try {
    return ipaddr.process(address).range() === 'unicast';
  } catch {
    return false;
  }
};

const bare = (host: string) => host.replace(/^\[|\]$/g, '');

export async function checkSource(repository: string, allowed: readonly string[], ports: SourcePorts): Promise<CheckedSource> {
  let url: URL;
  try {
    url = new URL(repository);
  } catch {
    throw new SourceNotAllowedError('it is not a URL (give the repository\'s clone URL, such as https://github.com/owner/name)');
  }
  if (!['https:', 'http:', 'git:', 'file:'].includes(url.protocol)) throw new SourceNotAllowedError(`${url.protocol}// URLs are not scanned (https:// is)`);
  if (url.username || url.password) throw new SourceNotAllowedError('the URL holds credentials: give a read token in the "token" field instead, which is never stored');
  if (url.search || url.hash) throw new SourceNotAllowedError('the URL has a query or a fragment');
  const href = url.href;
  const prefix = allowed.find((p) => href.startsWith(p));
  if (prefix === undefined) throw new SourceNotAllowedError(`only repositories under ${allowed.join(', ')} are scanned by this service`);

  if (url.protocol === 'file:') {
    const base = decodeURIComponent(new URL(prefix).pathname);
    let real: string;
    let realBase: string;
    try {
      [real, realBase] = await Promise.all([ports.realpath(decodeURIComponent(url.pathname)), ports.realpath(base)]);
    } catch {
      throw new SourceNotAllowedError('there is no repository at that path');
    }
    if (real !== realBase && !real.startsWith(realBase.endsWith('/') ? realBase : `${realBase}/`)) throw new SourceNotAllowedError('the path leads outside the allowed directory');
    return { url: `file://${real}`, pin: null };
  }

  const host = bare(url.hostname);
  const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol]!;
  const listedLiteral = bare(new URL(prefix).hostname);
  if (isIP(host)) {
    if (!isPublicAddress(host) && listedLiteral !== host) throw new SourceNotAllowedError('the address is private or local');
    return { url: href, pin: [host, port, host] };
  }
  let addresses: string[];
  try {
    addresses = await ports.resolve(host);
  } catch {
    throw new SourceNotAllowedError(`the host ${host} could not be found`);
  }
  if (addresses.length === 0) throw new SourceNotAllowedError(`the host ${host} could not be found`);
  if (!addresses.every(isPublicAddress)) throw new SourceNotAllowedError(`the host ${host} has a private or local address`);
  return { url: href, pin: [host, port, addresses[0]!] };
}
