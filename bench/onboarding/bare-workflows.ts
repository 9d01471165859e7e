/**
 * Bench-only baselines for onboardTenant: the least a three-step Temporal workflow can cost here.
 * Three steps that only wait, as regular activities (each a server round trip) or as local ones
 * (run inside the workflow task, like onboardTenant's steps). Deterministic code only.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { BareActivities, BareWorkflowInput } from './bare-activities.js';

export type { BareWorkflowInput } from './bare-activities.js';

const regular = proxyActivities<BareActivities>({ startToCloseTimeout: '30s' });
const local = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30s' });

export async function bareThreeActivities(input: BareWorkflowInput): Promise<number> {
  for (let step = 0; step < 3; step++) await regular.benchWait(input);
  return 3;
}

export async function bareThreeLocalActivities(input: BareWorkflowInput): Promise<number> {
  for (let step = 0; step < 3; step++) await local.benchWait(input);
  return 3;
}
