import { defineConfig } from 'vitest/config';
import FastSequencer from './test/harness/fast-sequencer.js';

// Four projects: `unit` needs nothing running (the platform simulator is started in process where
// needed); `workflows` runs the workflows with mocked activities on one dev server; `integration` gets ONE real Temporal dev server and ONE real Postgres for the whole run,
// started by the global setup (or taken from TEMPORAL_ADDRESS / DATABASE_URL); `surfaces` uses the
// product from outside as its users do (`npm start` as a child process, the CLI, a browser), each
// test file starting its own self-contained stack.
//
// `npm run test:fast` (unit + workflows) runs as one group of FAST_WORKERS processes, whatever the
// number of cores: a workflow test spends its time waiting on the dev server's timers and tasks, not on
// a CPU, so its files run side by side with each other and with the CPU-bound unit files (vitest's
// default, cores - 1, is ONE process on a 2-core machine: every file after the other, 8 minutes).
// The integration project keeps vitest's default and runs after them (its own groupOrder: projects
// sharing a group must share maxWorkers).
const FAST_WORKERS = Number(process.env.FAST_TEST_WORKERS ?? 6);

export default defineConfig({
  test: {
    pool: 'forks',
    // In test:fast the workflow files (waiting on the dev server) start before the unit files (using the CPU).
    sequence: { sequencer: FastSequencer },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/contract/**/*.test.ts', 'src/**/*.test.ts'],
          testTimeout: 30_000,
          maxWorkers: FAST_WORKERS,
          // Unit files share their worker processes and module cache (no file mocks modules or globals,
          // changes the environment or the working directory): importing the same modules once per file
          // was two thirds of the project's time (58 s isolated, 19 s shared, on 2 cores).
          isolate: false,
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
          maxWorkers: FAST_WORKERS,
          // Workflow files share their worker processes and module cache too (each file makes its own
          // connections, task queues and workers; the harness installs the SDK runtime once per process):
          // importing the SDK, the client and the harness once per file cost 1.5 s of CPU a file.
          isolate: false,
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
          sequence: { groupOrder: 1 },
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
          // Each file runs a whole stack (dev server, Postgres, worker): one at a time, beside the
          // integration files (same group), after the fast projects.
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
