import { APPROVAL_ACTIONS, type ApprovalAction, type SafeOpsEnv } from '../../config/safe-ops.js';
import { SAFE_OPS_DEFAULTS } from '../../config/defaults.js';
import { msOf } from '../../domain/durations.js';
import { createOperatorDirectory, parseOperatorList, type OperatorDirectory } from '../../secrets/operators.js';

/** The dangerous-operation guards as the gateway, the worker and tenantctl take them (src/config/safe-ops.ts). */
export interface SafeOps {
  operators: OperatorDirectory;
  /** Default of `close --after`. */
  closeDelay: string;
  approvals: ReadonlySet<ApprovalAction>;
  approvalTtlMs: number;
}

export function safeOpsOf(env: SafeOpsEnv): SafeOps {
  const parsed = env.OPERATORS ? parseOperatorList(env.OPERATORS) : undefined;
  const operators = createOperatorDirectory(parsed?.ok ? parsed.operators : []);
  const policy = env.APPROVAL_POLICY?.trim() ?? (env.OPERATORS ? APPROVAL_ACTIONS.join(',') : 'none');
  const approvals = new Set(policy === 'none' ? [] : policy.split(',').map((item) => item.trim() as ApprovalAction));
  const defaults = env.OPERATORS ? SAFE_OPS_DEFAULTS.withOperators : SAFE_OPS_DEFAULTS.withoutOperators;
  return {
    operators,
    closeDelay: env.CLOSE_DELAY ?? defaults.CLOSE_DELAY,
    approvals,
    approvalTtlMs: msOf(env.APPROVAL_TTL),
  };
}
