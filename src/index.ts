/** optmark as a library: the same operations the CLI and the HTTP API use. */
export { protect, type ProtectOptions, type ProtectResult } from './app/protect-image.js';
export { verify, inspect, type VerifyResult, type VerifyDetails } from './app/verify-image.js';
export { sniff } from './core/formats/sniff.js';
export { HANDLERS } from './core/formats/registry.js';
export { DATA_MINING_LABELS, PROHIBITED_CODES, DEFAULT_CODE, type DataMiningCode, type ProhibitedCode } from './core/xmp/vocabulary.js';
export * from './errors.js';
export { createProvenance, keysFromJwks, type Provenance, type KeySource } from './app/provenance.js';
export { SigningKeys } from './adapters/signing-keys.js';
