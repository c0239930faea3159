/** The text of src/client/api-types.ts for an OpenAPI document (openapi-typescript, binary parts as Blob). */
import { astToString, openapiTS } from 'optmark-openapi-types';

const HEADER = `/**
 * Generated from the OpenAPI document (GET /api/v1/openapi.json) by
 * openapi-typescript at build time (scripts/client-types.ts): do not edit.
 * test/client/types.test.ts fails when it differs from the served document.
 */
`;

export async function clientTypes(document: unknown): Promise<string> {
  const ast = await openapiTS(document as never, {
    // A binary part is a Blob (a File is one): what FormData sends as a file.
    transform(schema: { format?: string }) {
      return schema.format === 'binary' ? (BLOB as never) : undefined;
    },
  });
  return `${HEADER}${astToString(ast)}`;
}

// openapi-typescript's transform returns a TypeScript type node; it re-exports the factory it uses.
import ts from 'optmark-openapi-types/typescript';
const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier('Blob'));
