#!/usr/bin/env node
// Entry point of the `optmark` command; the code is compiled to dist/ by `npm ci` (the prepare script).
import { unsupportedNode } from './check-node.js';
import module from 'node:module';

const problem = unsupportedNode();
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 1;
} else {
  // Compiled code kept on disk between runs (Node's compile cache, in the system's temporary folder): a command starts sooner.
  module.enableCompileCache?.();
  // The server's allocator settings are set by re-executing this process, before the rest loads (src/cli/allocator.ts).
  if (process.argv[2] === 'serve') (await import('../dist/cli/allocator.js')).withServingAllocator();
  const { main } = await import('../dist/cli/main.js');
  process.exitCode = await main(process.argv.slice(2));
}
