/**
 * The CLI's gate on its calls in flight to a server (src/cli/batch/server-gate.ts),
 * against a stand-in for the server's per-key places: it closes to what the
 * server takes, opens again once the server takes more (another client of
 * the key went away), and a call alone in flight waits for places another
 * client holds only so long.
 */
import { describe, expect, it } from 'vitest';
import { createServerGate } from '../../src/cli/batch/server-gate.js';
import { OptmarkError } from '../../src/client/index.js';

/**
 * One key's places at a server (8), `others` of them held by another client
 * of the key; a call past them is refused as the server refuses it, naming
 * every call in progress (the other client's too).
 */
function keyPlaces(others: number, places = 8) {
  const state = { places, others, inFlight: 0, most: 0 };
  const call = async (ms: number) => {
    if (state.inFlight + state.others >= state.places) {
      throw new OptmarkError(`This API key already has ${state.inFlight + state.others} calls in progress; wait for one to finish`, 429, 'too_many_requests', 'r', 0.005);
    }
    state.inFlight++;
    state.most = Math.max(state.most, state.inFlight);
    await new Promise((resolve) => setTimeout(resolve, ms));
    state.inFlight--;
    return 'ok';
  };
  return { state, call };
}

describe('the CLI’s gate on calls in flight', () => {
  it('closes to the places another client leaves it, then opens again, up to --concurrency, once that client has gone', async () => {
    const server = keyPlaces(6);
    const said: string[] = [];
    const gate = createServerGate(8, (line) => said.push(line));
    const signal = new AbortController().signal;
    let answered = 0;
    const runs = Array.from({ length: 120 }, () =>
      gate
        .run(() => server.call(3), signal)
        .then((result) => {
          // The other client of the key goes away after 20 answers.
          if (++answered === 20) {
            server.state.others = 0;
            server.state.most = 0;
          }
          return result;
        }),
    );
    expect(await Promise.all(runs)).toEqual(Array(120).fill('ok'));
    expect(said[0]).toBe('optmark: the server takes 2 call(s) at once from this key: 2 file(s) at once from now on');
    expect(said).toContain('optmark: the server takes more calls from this key again: 3 file(s) at once from now on');
    // Probing a key still shared is refused each time: each refusal makes the next try wait twice as long.
    expect(said.length).toBeLessThan(20);
    expect(said.at(-1)).toMatch(/: 8 file\(s\) at once from now on$/);
    // Once open again, it used the places: more than the 2 it had closed to.
    expect(server.state.most).toBeGreaterThan(2);
  });

  it('a call alone in flight, refused because another client holds every place, gives up after its bound with the refusal', async () => {
    const server = keyPlaces(8);
    const gate = createServerGate(4, () => {}, { maxLoneWaitMs: 100 });
    const started = performance.now();
    const refusal = await gate.run(() => server.call(1), new AbortController().signal).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(OptmarkError);
    expect((refusal as OptmarkError).code).toBe('too_many_requests');
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(90);
    expect(ms).toBeLessThan(2000);
  });

  it('places this run fills alone: closed to them for good (no try refused again), and its calls refused wait without a bound', async () => {
    const server = keyPlaces(0, 2);
    const said: string[] = [];
    const gate = createServerGate(8, (line) => said.push(line), { maxLoneWaitMs: 1 });
    const signal = new AbortController().signal;
    let refusals = 0;
    const counted = () => server.call(5).catch((error: unknown) => {
      refusals++;
      throw error;
    });
    expect(await Promise.all(Array.from({ length: 40 }, () => gate.run(counted, signal)))).toEqual(Array(40).fill('ok'));
    // The first eight went out together: two taken, six refused; none after them.
    expect(refusals).toBeLessThanOrEqual(6);
    expect(said).toEqual(['optmark: the server takes 2 call(s) at once from this key: 2 file(s) at once from now on']);
    expect(server.state.most).toBe(2);
  });
});
