/**
 * handleRegistryEvent — why: a verified registry delivery must be handled once, even when the
 * platform redelivers it or the gateway crashes after answering. The gateway records it in the
 * inbox (delivery id unique) and starts this workflow under `registry-delivery:<deliveryId>`;
 * the activity routes it and marks it processed in one guarded transaction.
 *
 *   validate ─► processRegistryDelivery (route by event: image.* recorded for the tenant;
 *                                        unknown names recorded as such)
 */
import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ProcessRegistryDeliveryInput, ProcessRegistryDeliveryResult } from '../activities/registry.js';
import { registryDeliveryWorkflowId, workflowIdProblem } from '../src/domain/ids.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { databaseStep } from './activity-policies.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export type HandleRegistryEventInput = ProcessRegistryDeliveryInput;
export type HandleRegistryEventResult = ProcessRegistryDeliveryResult;

export async function handleRegistryEvent(input: HandleRegistryEventInput): Promise<HandleRegistryEventResult> {
  const deliveryId = typeof input?.deliveryId === 'string' ? input.deliveryId : '';
  if (deliveryId === '' || deliveryId.length > 200) {
    throw codedFailure(
      FailureCode.INVALID_INPUT,
      'handleRegistryEvent input must be { deliveryId: string (1-200 characters) }',
    );
  }
  // The id is the idempotency key of the start: one workflow per delivery.
  const problem = workflowIdProblem(registryDeliveryWorkflowId(deliveryId), workflowInfo().workflowId);
  if (problem) throw codedFailure(FailureCode.INVALID_INPUT, problem);
  return steps.processRegistryDelivery({ deliveryId });
}
