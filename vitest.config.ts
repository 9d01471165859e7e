import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs nothing running (the platform simulator is started in process where
// needed); `integration` gets ONE real Temporal dev server and ONE real Postgres for the whole run,
// started by the global setup (or taken from TEMPORAL_ADDRESS / DATABASE_URL).
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
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
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
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
