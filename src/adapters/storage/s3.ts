/**
 * The vault's objects in an S3-compatible bucket (OPTMARK_VAULT_S3_URL), for
 * several servers sharing one vault. AWS SDK v3; path-style addressing for
 * an endpoint of its own (MinIO, Ceph, s3rver...), virtual-hosted for AWS.
 *
 * - `s3://BUCKET[/PREFIX][?region=REGION]`: AWS itself, credentials from the
 *   SDK's usual chain (environment, profile, instance role);
 * - `http[s]://[KEY:SECRET@]HOST[:PORT]/BUCKET[/PREFIX][?region=REGION]`: an
 *   S3-compatible server at that address.
 *
 * Objects are sent as whole Buffers with checksums only where the service
 * requires them: a streamed upload with the SDK's default checksums is sent
 * aws-chunked, and some servers (s3rver) store that framing as the object's
 * bytes. An S3 PUT is atomic (the object appears whole or not at all) and
 * durable when answered.
 */
import { randomBytes } from 'node:crypto';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { BlobStore, StagedBlob } from '../../app/vault/ports.js';

export interface S3Location {
  readonly bucket: string;
  /** '' or a prefix ending in '/'. */
  readonly prefix: string;
  readonly client: S3ClientConfig;
}

/** What OPTMARK_VAULT_S3_URL says; throws an Error naming what is wrong. */
export function parseS3Url(text: string): S3Location {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error('must be s3://BUCKET[/PREFIX] or http(s)://[KEY:SECRET@]HOST[:PORT]/BUCKET[/PREFIX]');
  }
  const region = url.searchParams.get('region') || 'us-east-1';
  const common: S3ClientConfig = { region, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED', maxAttempts: 3 };
  if (url.protocol === 's3:') {
    const prefix = decodeURIComponent(url.pathname.replace(/^\/+/, ''));
    return { bucket: url.hostname, prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix, client: common };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must start with s3://, http:// or https://');
  const [bucket = '', ...rest] = url.pathname.replace(/^\/+/, '').split('/');
  if (bucket === '') throw new Error('must name the bucket as the first part of its path (http://HOST:PORT/BUCKET)');
  const prefix = decodeURIComponent(rest.filter((p) => p !== '').join('/'));
  const credentials = url.username ? { accessKeyId: decodeURIComponent(url.username), secretAccessKey: decodeURIComponent(url.password) } : undefined;
  return {
    bucket: decodeURIComponent(bucket),
    prefix: prefix ? `${prefix}/` : '',
    client: { ...common, endpoint: `${url.protocol}//${url.host}`, forcePathStyle: true, ...(credentials ? { credentials } : {}) },
  };
}

const NAME = /^[0-9a-f]{64}$/;

export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  private readonly client: S3Client;
  readonly bucket: string;
  private readonly prefix: string;

  constructor(location: S3Location) {
    this.client = new S3Client(location.client);
    this.bucket = location.bucket;
    this.prefix = location.prefix;
  }

  private key(name: string): string {
    if (!NAME.test(name)) throw new Error(`not a vault object name: ${name}`);
    return `${this.prefix}${name}`;
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(name), Body: body, ContentLength: body.byteLength, ContentType: 'application/octet-stream' }));
  }

  /** An S3 PUT cannot be split: it all happens at `publish`. */
  async stage(name: string, bytes: Uint8Array): Promise<StagedBlob> {
    this.key(name);
    return { publish: () => this.put(name, bytes), discard: async () => {} };
  }

  async get(name: string): Promise<Uint8Array | undefined> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
      return answer.Body ? await answer.Body.transformToByteArray() : new Uint8Array(0);
    } catch (error) {
      if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey' || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
      throw error;
    }
  }

  async delete(name: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
  }

  /** In the object `storage-id` under the prefix (not an object name: never listed as one). */
  async identity(): Promise<string> {
    const Key = `${this.prefix}storage-id`;
    const read = async () => {
      try {
        const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key }));
        return (await answer.Body?.transformToString())?.trim() || undefined;
      } catch (error) {
        if (error instanceof NoSuchKey || (error as { name?: string }).name === 'NoSuchKey' || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
        throw error;
      }
    };
    const found = await read();
    if (found) return found;
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: `${randomBytes(16).toString('hex')}\n`, ContentType: 'text/plain' }));
    // Read back: of two servers making it at once, both keep the one the bucket kept.
    return (await read())!;
  }

  async *list(): AsyncIterable<{ name: string; modifiedAt: Date }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix || undefined, ContinuationToken: token }));
      for (const item of page.Contents ?? []) {
        const name = (item.Key ?? '').slice(this.prefix.length);
        if (NAME.test(name)) yield { name, modifiedAt: item.LastModified ?? new Date(0) };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
