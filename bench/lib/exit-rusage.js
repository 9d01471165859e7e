// Loaded with `node --import` into every timed tenantctl run (bench/onboarding/cli-timings.ts). At the process's exit
// it writes the process's own CPU as one JSON line to file descriptor 3, a pipe the bench opened: getrusage
// (RUSAGE_SELF, so every thread of the process) in microseconds, where /proc counts 10 ms ticks.
import { writeSync } from 'node:fs';

process.once('exit', () => {
  const { userCPUTime, systemCPUTime } = process.resourceUsage();
  writeSync(3, `${JSON.stringify({ userCPUTime, systemCPUTime })}\n`);
});
