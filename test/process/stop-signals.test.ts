/**
 * The stop signals of `optmark serve` are held from before the start to the
 * end (src/cli/stop-signals.ts). Each case runs in a child process that
 * signals itself: a signal caught in the same tick as the server's handler
 * is set (as when a SIGTERM comes just as the start ends) reaches it; with
 * a listener removed and another added instead, Node drops that signal and
 * the process runs on.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('../../dist/cli/stop-signals.js', import.meta.url));

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
}

/** Run `body` as an ES module with `holdStopSignals` imported; it has 2 s before it says `lost` and exits 3. */
function run(body: string): Promise<Ended> {
  const script = `import { holdStopSignals } from ${JSON.stringify(MODULE)};
setTimeout(() => { console.log('lost'); process.exit(3); }, 2000);
${body}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout })));
}

describe('the stop signals held by optmark serve', () => {
  it('a SIGTERM caught in the tick in which the handler is set reaches it', async () => {
    const ended = await run(`const signals = holdStopSignals({ interrupt: true });
process.kill(process.pid, 'SIGTERM');
signals.handle((signal) => { console.log('handled', signal); process.exit(0); });`);
    expect(ended).toEqual({ code: 0, signal: null, stdout: 'handled SIGTERM\n' });
  });

  it('(what it guards against: a listener swapped for another in that tick never hears the signal)', async () => {
    const ended = await run(`const keep = () => {};
process.on('SIGTERM', keep);
process.kill(process.pid, 'SIGTERM');
process.off('SIGTERM', keep);
process.on('SIGTERM', (signal) => { console.log('handled', signal); process.exit(0); });`);
    expect(ended).toEqual({ code: 3, signal: null, stdout: 'lost\n' });
  });

  it('a signal that came during the start, ticks before the handler, is passed to it once it is set', async () => {
    const ended = await run(`const signals = holdStopSignals({ interrupt: true });
process.kill(process.pid, 'SIGINT');
await new Promise((resolve) => setTimeout(resolve, 100));
signals.handle((signal) => { console.log('handled', signal); process.exit(0); });`);
    expect(ended).toEqual({ code: 0, signal: null, stdout: 'handled SIGINT\n' });
  });

  it("a worker's SIGINT is ignored (its primary acts on Ctrl-C); its SIGTERM is acted on", async () => {
    const ended = await run(`const signals = holdStopSignals({ interrupt: false });
signals.handle((signal) => { console.log('handled', signal); process.exit(0); });
process.kill(process.pid, 'SIGINT');
await new Promise((resolve) => setTimeout(resolve, 100));
console.log('still running');
process.kill(process.pid, 'SIGTERM');`);
    expect(ended).toEqual({ code: 0, signal: null, stdout: 'still running\nhandled SIGTERM\n' });
  });

  it('released (a start that failed), a SIGTERM ends the process as it would without optmark', async () => {
    const ended = await run(`const signals = holdStopSignals({ interrupt: true });
signals.release();
process.kill(process.pid, 'SIGTERM');`);
    expect(ended).toEqual({ code: null, signal: 'SIGTERM', stdout: '' });
  });
});
