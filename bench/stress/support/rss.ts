/** The server's resident size over time, read from /proc. */
import type { Serve } from './server.js';

export interface RssSample {
  /** Milliseconds since sampling began. */
  readonly at: number;
  readonly rssMb: number;
}

export class RssSampler {
  readonly samples: RssSample[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly began = performance.now();
  /** VmHWM at the last sample: the peak, including between samples. */
  peakMb = Number.NaN;

  constructor(
    private readonly server: Serve,
    everyMs: number,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  sample(): RssSample | undefined {
    const memory = this.server.memory();
    if (!memory) return undefined;
    const sample = { at: performance.now() - this.began, rssMb: memory.rssMb };
    this.samples.push(sample);
    this.peakMb = memory.peakMb;
    return sample;
  }

  /** Takes a last sample. */
  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  get first(): number {
    return this.samples[0]?.rssMb ?? Number.NaN;
  }

  get last(): number {
    return this.samples.at(-1)?.rssMb ?? Number.NaN;
  }
}
