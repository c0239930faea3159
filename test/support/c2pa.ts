/**
 * C2PA manifest stores made with @trustnxt/c2pa-ts, signed by a throwaway
 * self-signed ECDSA certificate (no trust list involved: optmark never says
 * a manifest is trusted). WebP, which c2pa-ts does not write, gets the same
 * store in a `C2PA` chunk at the end of the RIFF, where the C2PA spec puts it.
 */
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { JPEG, PNG } from '@trustnxt/c2pa-ts/asset';
import { LocalSigner } from '@trustnxt/c2pa-ts/cose';
import { DataHashAssertion, ManifestStore, TrainingAndDataMiningAssertion, TrainingAndDataMiningChoice } from '@trustnxt/c2pa-ts/manifest';

export type Entries = Record<string, 'allowed' | 'notAllowed' | 'constrained'>;

let signer: Promise<LocalSigner> | undefined;

/**
 * A leaf certificate issued by a throwaway CA, with the profile C2PA asks of
 * a signer (digitalSignature, emailProtection, key identifiers): c2pa-ts
 * checks the data hash only when the signing credential passes that profile.
 */
function testSigner(): Promise<LocalSigner> {
  signer ??= (async () => {
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
    const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
    const validity = { notBefore: new Date('2020-01-01'), notAfter: new Date('2040-01-01') };
    const caKeys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
    const ca = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=optmark test CA',
      ...validity,
      keys: caKeys,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: '02',
      subject: 'CN=optmark test signer, O=optmark tests',
      issuer: ca.subject,
      ...validity,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: algorithm,
      extensions: [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension(['1.3.6.1.5.5.7.3.4']),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        await x509.AuthorityKeyIdentifierExtension.create(ca),
      ],
    });
    const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    return new LocalSigner(pkcs8, -7 as never, leaf, [ca]); // -7 = ES256
  })();
  return signer;
}

const choice = (use: Entries[string]) =>
  use === 'allowed' ? TrainingAndDataMiningChoice.Allowed : use === 'notAllowed' ? TrainingAndDataMiningChoice.NotAllowed : TrainingAndDataMiningChoice.Constrained;

/** `bytes` (JPEG or PNG) with a signed manifest holding a training-and-data-mining assertion and a data hash. */
export async function withC2pa(bytes: Uint8Array, entries: Entries, cawg = true): Promise<Uint8Array> {
  const asset = JPEG.canRead(bytes) ? new JPEG(bytes) : new PNG(bytes);
  const sign = await testSigner();
  const store = new ManifestStore();
  const manifest = store.createManifest({ assetFormat: asset.mimeType, instanceID: 'xmp:iid:optmark-test', defaultHashAlgorithm: 'SHA-256', signer: sign });
  const assertion = new TrainingAndDataMiningAssertion(cawg);
  assertion.entries = Object.fromEntries(Object.entries(entries).map(([use, value]) => [use, { choice: choice(value) }]));
  manifest.addAssertion(assertion);
  const dataHash = DataHashAssertion.create('SHA-256');
  manifest.addAssertion(dataHash);
  await asset.ensureManifestSpace(store.measureSize());
  await dataHash.updateWithAsset(asset);
  await manifest.sign(sign);
  await asset.writeManifestJUMBF(store.getBytes());
  return asset.getDataRange();
}

/** The JUMBF manifest store of a file c2pa-ts reads. */
export function manifestJumbf(bytes: Uint8Array): Uint8Array {
  return (JPEG.canRead(bytes) ? new JPEG(bytes) : new PNG(bytes)).getManifestJUMBF()!;
}

/** Whether c2pa-ts finds the file's content still matching the manifest's data hash. */
export async function dataHashMatches(bytes: Uint8Array): Promise<boolean> {
  const asset = JPEG.canRead(bytes) ? new JPEG(bytes) : new PNG(bytes);
  const { SuperBox } = await import('@trustnxt/c2pa-ts/jumbf');
  const result = await ManifestStore.read(SuperBox.fromBuffer(asset.getManifestJUMBF() as Uint8Array<ArrayBuffer>)).validate(asset);
  const codes = result.statusEntries.map((e) => String(e.code));
  if (codes.includes('assertion.dataHash.mismatch')) return false;
  if (!codes.includes('assertion.dataHash.match')) throw new Error(`c2pa-ts did not check the data hash: ${codes.join(', ')}`);
  return true;
}
