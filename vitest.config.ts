import { defineConfig } from 'vitest/config';

// Four projects: `unit` needs nothing running (the platform simulator is started in process where
// needed); `workflows` runs the workflows with mocked activities on one dev server; `integration` gets ONE real Temporal dev server and ONE real Postgres for the whole run,
// started by the global setup (or taken from TEMPORAL_ADDRESS / DATABASE_URL); `surfaces` uses the
// product from outside as its users do (`npm start` as a child process, the CLI, a browser), each
// test file starting its own self-contained stack.
export default defineConfig({
  test: {
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/contract/**/*.test.ts', 'src/**/*.test.ts'],
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          // Workflow decisions with mocked activities on one shared dev server: no Postgres, no platform.
          name: 'workflows',
          include: ['test/workflows/**/*.test.ts'],
          globalSetup: ['test/harness/fast-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 600_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/security/**/*.test.ts'],
          globalSetup: ['test/harness/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'surfaces',
          include: ['test/surfaces/**/*.test.ts'],
          testTimeout: 300_000,
          // The first start on a machine may build the Temporal CLI (about 5 minutes).
          hookTimeout: 900_000,
          // Each file runs a whole stack (dev server, Postgres, worker): one at a time.
          fileParallelism: false,
        },
      },
    ],
  },
});
