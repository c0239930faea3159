// openapi-typescript, resolved here so that it gets the TypeScript 5 it is written for.
export { default as openapiTS, astToString } from 'openapi-typescript';
