import type { OnboardingStatus } from './onboard-tenant-messages.js';

/**
 * The run's own lines of its "current details" in the Web UI: what it is doing and, when blocked, how
 * to unblock it (shown under its current wait, workflows/waits.ts).
 */
export function onboardingDetails(status: OnboardingStatus): string[] {
  const funding =
    status.funding.state === 'skipped'
      ? 'no funding requested'
      : `${status.funding.state} (${status.funding.amountMicroUsd} micro-USD)`;
  const lines = [
    `**${status.stage}** — tenant \`${status.externalRef}\` (${status.name})`,
    `sub-account: ${status.subaccountId ?? 'not yet created'}`,
    `funding: ${funding}`,
    `key: ${status.key.state}${status.key.fingerprint ? ` ${status.key.fingerprint}` : ''}`,
  ];
  if (status.waitingFor) lines.push(`waiting: ${status.waitingFor}`);
  if (status.error) lines.push(`error: ${status.error}`);
  return lines;
}
