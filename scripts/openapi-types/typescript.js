// The TypeScript 5 compiler API openapi-typescript builds its output with (for its `transform` option).
export { default } from 'typescript';
