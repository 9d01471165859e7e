import { describe, expect, it } from 'vitest';
import { CLUSTER_TEST_OPTIONS } from '../../chaos/options.js';
import { runChaos } from '../../chaos/run.js';

/**
 * The production topology, proven here without Docker: the Temporal server built from its Go module
 * (cached; built on first use) on an embedded Postgres with 4 history shards, two `tenantctl worker`
 * processes on one task queue, 50 onboardings, 10 rotations and 5 closes under platform faults; one
 * worker SIGKILLed while the other keeps working, and the Temporal server restarted mid-run. Then
 * every chaos invariant: exactly-once on the simulator's books, no token in any history or log.
 */
describe('the cluster (Temporal server on Postgres, two workers)', () => {
  it(
    'keeps exactly-once and every secret out of history when a worker is killed and the Temporal server restarts',
    async () => {
      const lines: string[] = [];
      const report = await runChaos({ ...CLUSTER_TEST_OPTIONS, log: (line) => lines.push(line) });
      const context = lines.slice(-40).join('\n');

      const fired = report.chaos.fired.map((e) => e.name);
      expect(
        fired.some((name) => name.startsWith('worker SIGKILL')),
        context,
      ).toBe(true);
      expect(fired, context).toContain('Temporal server restart #1');
      expect(report.chaos.workerKills).toBe(1);
      // Both worker processes (and the restarted one) completed workflow tasks: the work was shared.
      expect(report.workerIdentities.length, context).toBeGreaterThanOrEqual(2);
      const count = (kind: string) =>
        Object.entries(report.operations)
          .filter(([key]) => key.startsWith(`${kind} `))
          .reduce((sum, [, n]) => sum + n, 0);
      expect({ onboard: count('onboard'), rotate: count('rotate'), close: count('close') }).toEqual({
        onboard: 50,
        rotate: 10,
        close: 5,
      });
      expect(report.operations['onboard completed'], context).toBe(50);

      const broken = report.results
        .filter((r) => r.violations.length > 0)
        .map((r) => ({ invariant: r.name, violations: r.violations.slice(0, 5) }));
      expect(broken, context).toEqual([]);
      for (const name of [
        'each tenant created once',
        'each transfer applied once',
        'no token in any workflow history',
      ]) {
        expect(report.results.find((r) => r.name === name)?.checked, name).toBeGreaterThan(0);
      }
    },
    30 * 60_000,
  );
});
