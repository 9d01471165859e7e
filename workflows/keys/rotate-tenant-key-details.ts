import type { RotationStatus } from './rotate-tenant-key-messages.js';

/**
 * The run's own lines in the Web UI's current details, under its wait (workflows/waits.ts writes those
 * and the TenantStatus search attribute, `rotation_<stage>`, e.g. `rotation_held`, so operators can list
 * every held rotation).
 */
export function rotationDetails(status: RotationStatus): string[] {
  const lines = [
    `**${status.stage}** — rotating key slot \`${status.slot}\` of tenant \`${status.externalRef}\`` +
      (status.emergency ? ' (EMERGENCY: old key revoked right after deploy)' : ''),
    `generations: ${status.fromGeneration ?? '?'} → ${status.toGeneration ?? '?'}`,
    `old key: ${status.oldKey.keyId ?? '?'} ${status.oldKey.fingerprint ?? ''} (${status.oldKey.status})`,
    `new key: ${status.newKey.keyId ?? 'not yet created'} ${status.newKey.fingerprint ?? ''} (${status.newKey.status})`,
    `deployer: ${status.deployer ?? '?'}${status.deployedAt ? `, deployed at ${status.deployedAt}` : ''}`,
  ];
  if (status.quietCheck)
    lines.push(
      `quiet check (${status.quietCheck.method}, ${status.quietCheck.polls} polls): ${status.quietCheck.verdict}`,
    );
  if (status.activeKeys) {
    lines.push(
      `active keys: ${status.activeKeys
        .map(
          (k) =>
            `${k.id} ${k.name ?? ''} last used ` +
            (k.lastUseKnown ? (k.lastUsedAt ?? 'never') : 'not shown') +
            (k.isCurrentKeyOfSlot ? ' [being rotated: in use]' : k.looksUnused ? ' [looks unused]' : ''),
        )
        .join('; ')}`,
    );
  }
  for (const note of status.notes) lines.push(`note: ${note}`);
  if (status.error) lines.push(`error: ${status.error}`);
  return lines;
}
