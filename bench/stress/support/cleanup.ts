/**
 * Whatever a run sets up outside itself (server processes, a PostgreSQL
 * cluster, a mounted file system) must go however the run ends: normally,
 * on a failed assertion or exception, or on Ctrl-C. Tasks are synchronous so
 * that they can run from the 'exit' event, and run newest first (a server
 * before the file system it writes to).
 */
const tasks: Array<{ name: string; run: () => void }> = [];

/**
 * Register a task; the returned function unregisters it and, unless told
 * the thing is gone already, runs it now (once).
 */
export function onCleanup(name: string, run: () => void): (runNow?: boolean) => void {
  const task = { name, run };
  tasks.push(task);
  return (runNow = true) => {
    const index = tasks.indexOf(task);
    if (index < 0) return;
    tasks.splice(index, 1);
    if (runNow) run();
  };
}

export function cleanupAll(): void {
  for (let task = tasks.pop(); task; task = tasks.pop()) {
    try {
      task.run();
    } catch (error) {
      process.stderr.write(`cleanup of ${task.name} failed: ${(error as Error).message}\n`);
    }
  }
}

process.once('exit', cleanupAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: cleaning up\n`);
    cleanupAll();
    process.exit(130);
  });
}
