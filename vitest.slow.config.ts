import { defineConfig } from 'vitest/config';

// `npm run test:slow`: the tests `npm test` leaves out for their waiting (a link throttled to hundreds of KB/s), with its set-up.
export default defineConfig({
  test: {
    include: ['test/**/*.slow.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    expect: { poll: { timeout: 15_000 } },
    maxWorkers: 2,
  },
});
