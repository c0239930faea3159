#!/usr/bin/env node
// Entry point of the `optmark` command; the code is compiled to dist/ by `npm ci` (the prepare script).
import { main } from '../dist/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
