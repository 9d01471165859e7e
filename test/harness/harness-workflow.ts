import { proxyActivities } from '@temporalio/workflow';
import type { HarnessActivities } from './harness-activities.js';

const { recordHarnessPing } = proxyActivities<HarnessActivities>({ startToCloseTimeout: '10s' });

export interface HarnessPingInput {
  marker: string;
}

/** Test-only: proves worker -> activity -> db layer -> Postgres, read back by the test. */
export async function harnessPing(input: HarnessPingInput): Promise<{ recorded: string }> {
  await recordHarnessPing({ marker: input.marker });
  return { recorded: input.marker };
}
