/** The vault's storage as configured: an S3-compatible bucket when OPTMARK_VAULT_S3_URL is set, else a directory. */
import type { BlobStore } from '../../app/vault/ports.js';
import { FileBlobStore } from './filesystem.js';
import { parseS3Url, S3BlobStore } from './s3.js';

export function openBlobStore(settings: { readonly vaultDir: string; readonly vaultS3Url: string | undefined }): BlobStore {
  return settings.vaultS3Url ? new S3BlobStore(parseS3Url(settings.vaultS3Url)) : new FileBlobStore(settings.vaultDir);
}
