#!/usr/bin/env node
// The Node.js release optmark needs, checked before anything else loads:
// by `npm ci` (preinstall), `npm test` (pretest) and the `optmark` command.
// Written for any Node.js that can still run an ES module, so that an old one
// gets this one line rather than a syntax or engine error from a dependency.
import { pathToFileURL } from 'node:url';

export const REQUIRED = { major: 24, minor: 11 };

/** The line to print when this Node.js is older than optmark needs, else undefined. */
export function unsupportedNode(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number);
  if (major > REQUIRED.major || (major === REQUIRED.major && minor >= REQUIRED.minor)) return undefined;
  return `optmark needs Node.js ${REQUIRED.major}.${REQUIRED.minor} or later (Node.js ${REQUIRED.major} LTS); this is ${version}. Install Node.js ${REQUIRED.major} from https://nodejs.org/ or your package manager, then run the command again.`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const problem = unsupportedNode();
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
}
