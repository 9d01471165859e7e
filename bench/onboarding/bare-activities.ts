import { setTimeout as sleep } from 'node:timers/promises';

export interface BareWorkflowInput {
  waitMs: number;
}

/** The baseline's only step: wait as long as one simulated platform call takes. */
export function createBareActivities() {
  return {
    async benchWait(input: BareWorkflowInput): Promise<void> {
      await sleep(input.waitMs);
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
