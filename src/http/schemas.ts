/**
 * JSON Schemas of every response body. Routes declare them (fastify
 * serializes with them) and the OpenAPI document is built from the same
 * objects, so the two cannot drift apart.
 */
import { HANDLERS } from '../core/formats/registry.js';
import { SIGNAL } from '../core/signals.js';
import { STATUS } from './error-handler.js';

/** Set to `invalidated` on a protect answer whose upload carried a C2PA manifest (docs/provenance.md). */
export const C2PA_HEADER = 'Optmark-C2PA-Manifest';
/** On the dashboard's download of a fingerprinted file: `added`, or `found` when the upload already carried the mark (docs/dashboard.md). */
export const FINGERPRINT_HEADER = 'Optmark-Fingerprint';

const sha256 = { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256, 64 lowercase hex characters' } as const;
const signals = {
  type: 'array',
  items: { type: 'string', enum: Object.values(SIGNAL) },
  description: 'Opt-out signals; only iptc.dataMining decides optedOut',
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
    signals: { ...signals, description: 'Opt-out signals written' },
  },
} as const;

export const verifyResult = {
  $id: 'VerifyResult',
  type: 'object',
  additionalProperties: false,
  required: ['optedOut', 'signals', 'provenance', 'fingerprint', 'sha256'],
  properties: {
    optedOut: { type: 'boolean', description: 'The image carries the IPTC/PLUS Data Mining opt-out (a DMI-PROHIBITED value)' },
    signals,
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
