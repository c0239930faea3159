/**
 * An S3-compatible server on loopback for the vault's bucket back end:
 * s3rver (npm), the one these machines can run (no MinIO, no Docker). It
 * keeps its objects in a directory of its own; its credentials are S3RVER /
 * S3RVER. Objects are read back through the SDK, never trusted from its
 * directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, S3Client, GetObjectCommand } from '@aws-sdk/client-s3';

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;

export interface TestS3 {
  /** OPTMARK_VAULT_S3_URL for the bucket `vault`. */
  readonly url: string;
  readonly client: S3Client;
  readonly bucket: string;
  /** Every key in the bucket. */
  keys(): Promise<string[]>;
  /** An object's bytes, as stored. */
  object(key: string): Promise<Uint8Array>;
  close(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
  const directory = mkdtempSync(join(tmpdir(), 'optmark-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: 'vault' }] });
  const { port } = await server.run();
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: `http://127.0.0.1:${port}`,
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return {
    url: `http://S3RVER:S3RVER@127.0.0.1:${port}/vault`,
    client,
    bucket: 'vault',
    async keys() {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: 'vault', ContinuationToken: token }));
        // The objects, not the storage's id beside them (adapters/storage/s3.ts).
        keys.push(...(page.Contents ?? []).map((c) => c.Key!).filter((key) => !key.endsWith('storage-id')));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    async object(key) {
      const answer = await client.send(new GetObjectCommand({ Bucket: 'vault', Key: key }));
      return answer.Body!.transformToByteArray();
    },
    async close() {
      client.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
