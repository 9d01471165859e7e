import { defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer, DecisionBy, TransferVerdict } from '../src/domain/operator-decisions.js';

/**
 * The operator decisions of a run that moves money through the transfer loop (onboardTenant's funding,
 * fundTenant): the same names, rules and answers in both (src/domain/operator-decisions.ts). A validator
 * refuses a bad or untimely one before it reaches history, and the caller gets the answer.
 */
/** The parent's paid balance was topped up: retry a transfer refused for INSUFFICIENT_BALANCE now. */
export const parentFundedUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('parentFunded');
/** An operator's verdict on a transfer in needs_operator; answers once the verdict is applied. */
export const resolveTransferUpdate = defineUpdate<DecisionAnswer, [TransferVerdict]>('resolveTransfer');
