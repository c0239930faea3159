/**
 * JSON Schemas of every response body. Routes declare them (fastify
 * serializes with them) and the OpenAPI document is built from the same
 * objects, so the two cannot drift apart.
 */
import { HANDLERS } from '../core/formats/registry.js';
import { SIGNAL } from '../core/signals.js';
import { PROHIBITED_CODES } from '../core/xmp/vocabulary.js';
import { STATUS } from './error-handler.js';

/** Set to `invalidated` on a protect answer whose upload carried a C2PA manifest (docs/provenance.md). */
export const C2PA_HEADER = 'Optmark-C2PA-Manifest';
/** On the dashboard's download of a fingerprinted file: `added`, or `found` when the upload already carried the mark (docs/dashboard.md). */
export const FINGERPRINT_HEADER = 'Optmark-Fingerprint';
/**
 * On every protect answer (API and dashboard): `kept CODE` when the upload
 * already carried that opt-out value (kept, since no other was asked for,
 * or asked for again), `written CODE` otherwise.
 */
export const OPT_OUT_HEADER = 'Optmark-Opt-Out';
/** On the dashboard's download of a file marked without JavaScript: the id of its dated service record (docs/records.md). */
export const RECORD_HEADER = 'Optmark-Record';

export function optOutHeader(result: { readonly value: string; readonly alreadyCarried: boolean }): string {
  return `${result.alreadyCarried ? 'kept' : 'written'} ${result.value}`;
}

const sha256 = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256, 64 lowercase hex characters' } as const;
const signalNames = { type: 'string', enum: Object.values(SIGNAL) } as const;
const nullableString = { type: ['string', 'null'] } as const;

/** verify's `details` (`?detail=full`): what was found beyond the spec's fields (app/verify-image.ts, VerifyDetails). */
const verifyDetails = {
  type: 'object',
  additionalProperties: false,
  required: ['format', 'mimeType', 'signals', 'dataMining', 'otherConstraints', 'tdmrep', 'c2pa', 'warnings'],
  description: 'Only with ?detail=full: everything verify found, in every vocabulary, whether or not the file has the IPTC field',
  properties: {
    format: { type: 'string', enum: HANDLERS.map((h) => h.format) },
    mimeType: { type: 'string', enum: HANDLERS.map((h) => h.mimeType) },
    signals: { type: 'array', items: signalNames, description: 'Every opt-out signal found, also when plus:DataMining is absent (the answer\'s signals is then [])' },
    dataMining: {
      type: 'array',
      description: 'Every plus:DataMining occurrence, standard packet first; more than one is a defect (warned about)',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['value', 'code', 'label', 'prohibited', 'form', 'extended'],
        properties: {
          value: { type: 'string', description: 'As stored, surrounding whitespace removed' },
          code: { ...nullableString, description: 'The PLUS vocabulary code (DMI-...) when the value is exactly its http:// URI' },
          label: { ...nullableString, description: "The code's IPTC description" },
          prohibited: { type: 'boolean', description: 'One of the seven DMI-PROHIBITED* URIs: this occurrence opts out' },
          form: { type: 'string', enum: ['element', 'attribute', 'resource'], description: 'How the RDF writes it' },
          extended: { type: 'boolean', description: 'Held in JPEG Extended XMP' },
        },
      },
    },
    otherConstraints: { ...nullableString, description: 'plus:OtherConstraints (x-default), the readable companion of DMI-PROHIBITED-SEECONSTRAINT' },
    tdmrep: {
      type: 'object',
      additionalProperties: false,
      required: ['reservation', 'policy'],
      description: 'W3C TDMRep in the XMP, as stored; a reservation of exactly 1 is the tdmrep.reservation signal',
      properties: { reservation: nullableString, policy: nullableString },
    },
    c2pa: {
      type: 'object',
      additionalProperties: false,
      required: ['present', 'readable', 'trainingMining'],
      description: "The C2PA manifest store. Its signature is not checked against any trust list: a signal says what the file claims (docs/provenance.md)",
      properties: {
        present: { type: 'boolean', description: 'The file carries a manifest store' },
        readable: { type: 'boolean', description: 'The store could be parsed (a broken or hostile one is ignored)' },
        trainingMining: {
          type: 'array',
          description: "The active manifest's training-and-data-mining assertions",
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['assertion', 'entries', 'signal'],
            properties: {
              assertion: { type: 'string', enum: ['cawg.training-mining', 'c2pa.training-mining'] },
              entries: { type: 'object', additionalProperties: { type: 'string' }, description: 'Each use named (cawg.ai_training, ...) and its choice (allowed, notAllowed, constrained)' },
              signal: { type: ['string', 'null'], enum: [SIGNAL.cawgTrainingMining, SIGNAL.c2paTrainingMining, null], description: 'The signal it makes, or null when no AI-training or data-mining use is notAllowed or constrained' },
            },
          },
        },
      },
    },
    warnings: { type: 'array', items: { type: 'string' }, description: 'Defects found, in words: several values, a value that only looks like a vocabulary term, repeated properties Adobe-based readers reject, misplaced XMP, ...' },
  },
} as const;

export const protectResult = {
  $id: 'ProtectResult',
  type: 'object',
  additionalProperties: false,
  required: ['imageBase64', 'mimeType', 'filename', 'sha256', 'signals'],
  properties: {
    imageBase64: { type: 'string', contentEncoding: 'base64', description: 'The marked image bytes' },
    mimeType: { type: 'string', enum: HANDLERS.map((h) => h.mimeType), description: 'Media type of the produced bytes' },
    filename: { type: 'string', description: 'Suggested file name; its extension matches the produced bytes' },
    sha256: { ...sha256, description: 'SHA-256 of the marked bytes' },
    signals: { type: 'array', items: { type: 'string', enum: [SIGNAL.iptcDataMining] }, description: 'Opt-out signals written: the IPTC/PLUS Data Mining field, the one protect writes' },
  },
} as const;

export const verifyResult = {
  $id: 'VerifyResult',
  type: 'object',
  additionalProperties: false,
  required: ['optedOut', 'signals', 'provenance', 'fingerprint', 'sha256'],
  properties: {
    optedOut: { type: 'boolean', description: 'The image carries the IPTC/PLUS Data Mining opt-out (a DMI-PROHIBITED value)' },
    signals: {
      type: 'array',
      items: signalNames,
      description:
        'Opt-out signals found, when the file has a plus:DataMining field (whatever its value); an empty array when the field is absent, whatever other vocabularies say (?detail=full shows them). Only iptc.dataMining decides optedOut',
    },
    provenance: {
      type: 'object',
      additionalProperties: false,
      required: ['present', 'valid', 'verifiable'],
      properties: { present: { type: 'boolean' }, valid: { type: 'boolean' }, verifiable: { type: 'boolean' } },
      description: "This service's signed provenance tag: present in the file, checkable with this server's keys, valid for the file (docs/provenance.md)",
    },
    fingerprint: {
      type: 'object',
      additionalProperties: false,
      required: ['present', 'confidence', 'blocks'],
      properties: { present: { type: 'boolean' }, confidence: { type: 'number', minimum: 0, maximum: 1 }, blocks: { type: 'integer', minimum: 0 } },
      description: "Experimental in-pixel detector: present at a false-positive probability of at most 1e-6 per check; confidence is the share of the voting blocks that match (about 0.5 without the mark), blocks the number that voted (0 when none could: no fingerprint key, an image under 64 pixels a side, flat, or too large to decode). Evidence for this deployment's key, not proof of authorship (docs/fingerprint.md)",
    },
    sha256: { ...sha256, description: 'SHA-256 of the uploaded bytes' },
    details: verifyDetails,
  },
} as const;

const allowance = {
  type: 'object',
  additionalProperties: false,
  required: ['used', 'limit', 'remaining'],
  properties: { used: { type: 'integer', minimum: 0 }, limit: { type: 'integer', minimum: 0 }, remaining: { type: 'integer', minimum: 0 } },
} as const;

export const usageResult = {
  $id: 'Usage',
  type: 'object',
  additionalProperties: false,
  required: ['protect', 'verify', 'resetsAt'],
  properties: {
    protect: allowance,
    verify: allowance,
    resetsAt: { type: 'string', format: 'date-time', description: 'Start of the next calendar month, UTC' },
  },
} as const;

const recordLayer = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'state', 'keyVersion'],
  description: 'A layer applied on top of the opt-out and its provenance tag',
  properties: {
    name: { type: 'string', enum: ['fingerprint'], description: 'The experimental in-pixel fingerprint' },
    state: { type: 'string', enum: ['added', 'found'], description: '`added` by this marking, or `found` already in the pixels (and not added again)' },
    keyVersion: { type: ['integer', 'null'], description: 'The version of the fingerprint secret of the mark (null when not known)' },
  },
} as const;

const compactJws = { type: 'string', pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' } as const;

/** One dated service record as the API's lookup answers it (docs/records.md). */
const serviceRecord = {
  type: 'object',
  additionalProperties: false,
  required: ['recordId', 'createdAt', 'fileName', 'sha256Original', 'sha256Marked', 'value', 'layers', 'kid', 'user', 'batchId', 'jws'],
  properties: {
    recordId: { type: 'string', pattern: '^rec_[A-Za-z0-9]+$' },
    createdAt: { type: 'string', format: 'date-time', description: 'When the file was marked (UTC, to the millisecond); the JWS\'s iat is its second' },
    fileName: { type: 'string', description: 'The name the file was uploaded with (empty when it had none)' },
    sha256Original: { ...sha256, description: 'SHA-256 of the file as uploaded' },
    sha256Marked: { ...sha256, description: 'SHA-256 of the marked file the service returned' },
    value: { type: 'string', enum: [...PROHIBITED_CODES], description: 'The plus:DataMining code the marked file carries' },
    layers: { type: 'array', items: recordLayer, description: 'Layers applied besides the opt-out and the provenance tag (empty: none)' },
    kid: { type: 'string', description: "The key id of the marked file's provenance tag; the JWKS holds its public key" },
    user: { type: 'string', description: 'The email of the person who marked the file, as it was then' },
    batchId: { type: ['string', 'null'], description: "The dashboard batch the file was marked in (null: marked on its own)" },
    jws: {
      type: 'object',
      additionalProperties: false,
      required: ['public', 'private'],
      description: "The record signed by the service with its provenance key ring (EdDSA, Ed25519): verify both with /.well-known/jwks.json",
      properties: {
        public: { ...compactJws, description: 'Compact JWS of {recordId, iat, sha256Marked, value, layers, kid, iss}: what the public lookup shows' },
        private: { ...compactJws, description: "Compact JWS of {recordId, iat, account, user, fileName, sha256Original, batchId, publicJwsSha256, kid, iss}: the rest, bound to the public one by its SHA-256" },
      },
    },
  },
} as const;

export const recordsResult = {
  $id: 'Records',
  type: 'object',
  additionalProperties: false,
  required: ['records'],
  properties: {
    records: { type: 'array', minItems: 1, items: serviceRecord, description: 'Every record of the account whose original or marked SHA-256 is the one asked for, oldest first (at most 100)' },
  },
} as const;

export const errorResult = {
  $id: 'Error',
  type: 'object',
  additionalProperties: false,
  required: ['error', 'code', 'requestId'],
  properties: {
    error: { type: 'string', description: 'A readable message' },
    code: { type: 'string', enum: Object.keys(STATUS), description: 'Stable machine-readable code (docs/errors.md)' },
    requestId: { type: 'string', description: 'Also in the Request-Id header and the server logs' },
  },
} as const;

export const healthResult = {
  $id: 'Health',
  type: 'object',
  additionalProperties: false,
  required: ['status'],
  properties: { status: { type: 'string', enum: ['ok'] } },
} as const;
