import type { BeginRotationResult } from '../../activities/keys/rotation.js';

/** What a mocked beginRotation answers: the slot's generation 1 rotated to 2, deployed by notify, not adopted. */
export function begunRotation(
  oldKeyId: string,
  ids: { rotationId?: string; subaccountId?: string } = {},
): BeginRotationResult {
  return {
    rotationId: ids.rotationId ?? 'rot_1',
    subaccountId: ids.subaccountId ?? 'sa_1',
    fromGeneration: 1,
    toGeneration: 2,
    oldKeyId,
    oldFingerprint: 'fp_old',
    deployer: { kind: 'notify' },
    adopted: false,
  };
}
