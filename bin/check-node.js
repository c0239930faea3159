#!/usr/bin/env node
// The Node.js release optmark needs, checked before anything else loads:
// by `npm ci` (preinstall), `npm test` (pretest) and the `optmark` command.
// Written for any Node.js that can still run an ES module, so that an old one
// gets this one line rather than a syntax or engine error from a dependency.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export const REQUIRED = { major: 24, minor: 11 };

/** The line to print when this Node.js is older than optmark needs, else undefined. */
export function unsupportedNode(version = process.versions.node) {
  const [major, minor] = version.split('.').map(Number);
  if (major > REQUIRED.major || (major === REQUIRED.major && minor >= REQUIRED.minor)) return undefined;
  return `optmark needs Node.js ${REQUIRED.major}.${REQUIRED.minor} or later (Node.js ${REQUIRED.major} LTS); this is ${version}. Install Node.js ${REQUIRED.major} from https://nodejs.org/ or your package manager, then run the command again.`;
}

/**
 * Whether this is npm installing optmark into another project (its
 * preinstall, run from that project): there an older Node.js may still use
 * optmark/client, whose minimum is package.json's "engines" (20.19).
 */
export function installedAsDependency(env = process.env, cwd = process.cwd()) {
  return env.npm_lifecycle_event === 'preinstall' && env.INIT_CWD !== undefined && resolve(env.INIT_CWD) !== resolve(cwd);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const problem = unsupportedNode();
  if (problem && installedAsDependency()) {
    process.stderr.write(`optmark: the optmark command and server need Node.js ${REQUIRED.major}.${REQUIRED.minor} or later (this is ${process.versions.node}); optmark/client works here.\n`);
  } else if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
}
