import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests that wait on the clock of a throttled link (tens of seconds, the CPU idle) run with `npm run test:slow`.
    exclude: [...configDefaults.exclude, 'test/**/*.slow.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // expect.poll retries until its matcher holds; a second (the default) is short for a page on a loaded
    // 2-core machine (25 files listed took longer), and a poll that holds returns at once whatever the limit.
    expect: { poll: { timeout: 15_000 } },
    // Tests spawn ExifTool, exiv2 and the CLI; two workers match the machine's two cores.
    maxWorkers: 2,
    // Memory tests collect garbage before they measure (test/support/gc.ts); the flag is given at the start.
    execArgv: ['--expose-gc'],
  },
});
