/**
 * Records the histories in test/histories/branches/: runs that take a branch the plain recordings
 * (scripts/record-histories.ts, one run per workflow) and the decision recordings
 * (scripts/record-decision-histories.ts) never reach, for the replay test that keeps those branches
 * deterministic (test/integration/replay-branches.test.ts). Run from the repository's root after a
 * deliberate workflow change, or to add a branch:
 *   npm run histories:record-branches   (npx tsx scripts/record-branch-histories.ts)
 * It starts its own ephemeral stack (Temporal dev server, Postgres, simulator, worker) and rewrites every file in
 * test/histories/branches/ with index.json; test/unit/branch-histories.test.ts checks that each recorded run
 * really took its branch, so a recording that misses it fails there.
 *
 * rotateFleet-quietGate / rotateTenantKey-fleetQuietGate: a fleet rotation (not an adoption) of one tenant
 * whose child rotation finds its old key not yet quiet (quiet period 2 s), so it waits out its quiet gate
 * behind patched('fleet-releases-quiet-waits') (workflows/keys/key-slot-run.ts), tells the fleet
 * waiting_for_quiet (released from its bound), then completes and tells it how it settled.
 * Payloads are unencrypted and hold no secret.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { rotationWorkflowId } from '../src/domain/ids.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { findOrBuildTemporalCli } from '../src/infra/temporal-cli.js';
import { startRecordingStack } from './recording-stack.js';

const DIR = 'test/histories/branches';
const { config, stack, client, taskQueue, close } = await startRecordingStack();
const ids: Record<string, string> = {};

try {
  const ref = 'rec-fleet-quiet';
  const onboarding = await startOnboarding(
    client,
    { externalRef: ref, name: 'Recorded Fleet Quiet', fundingMicroUsd: '1000000' },
    { taskQueue },
  );
  await onboarding.result();

  // The child's first look comes right after its deploy: the old key is not quiet for 2 s yet, so it waits.
  const fleet = await client.workflow.start('rotateFleet', {
    taskQueue,
    workflowId: 'rotate-fleet:quiet-gate',
    args: [
      {
        slot: 'default',
        concurrency: 1,
        options: { quietPeriod: '2s', propagationAllowance: '1s', pollInterval: '300ms', quietDeadline: '60s' },
      },
    ],
  });
  const totals = (await fleet.result()) as { completed: number; waiting?: number };
  if (totals.completed !== 1 || totals.waiting !== 0) throw new Error(`fleet totals ${JSON.stringify(totals)}`);
  ids['rotateFleet-quietGate'] = fleet.workflowId;
  ids['rotateTenantKey-fleetQuietGate'] = rotationWorkflowId(ref, 'default');

  const cli = await findOrBuildTemporalCli({ cliPath: config.TEMPORAL_CLI_PATH });
  if (!cli) throw new Error('no temporal CLI to export histories with');
  mkdirSync(DIR, { recursive: true });
  for (const [name, workflowId] of Object.entries(ids)) {
    const json = execFileSync(
      cli,
      ['workflow', 'show', '--address', stack.env.TEMPORAL_ADDRESS!, '--workflow-id', workflowId, '--output', 'json'],
      { encoding: 'utf8' },
    );
    const file = `${DIR}/${name}.json`;
    writeFileSync(file, json.endsWith('\n') ? json : `${json}\n`);
    console.error(`[record] ${file}: ${(JSON.parse(json) as { events: unknown[] }).events.length} events`);
  }
  writeFileSync(`${DIR}/index.json`, `${JSON.stringify(ids, null, 2)}\n`);
} finally {
  await close();
}
