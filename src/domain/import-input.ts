import { z } from 'zod';
import { deployerSpecSchema, rotationTimingsSchema } from './rotation-input.js';
import { externalRefSchema, slotSchema, tenantNameSchema } from './tenant-input.js';
import { freeText, pathSegmentId } from './text.js';
import { continuedSchema } from './wait-options.js';

/**
 * importTenant's input: one platform sub-account to bring under our records with the ref the plan
 * chose for it. Built by `tenantctl import apply` from a fresh plan; a Web-UI start gets the same checks
 * (and the workflow re-reads the sub-account, so a hand-typed input cannot import the wrong one).
 */
export const importTenantInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  subaccountId: pathSegmentId(200),
  name: tenantNameSchema,
  /** `platform`: the sub-account carries the ref itself; `map`: it has none and the operator's mapping gives it. */
  refSource: z.enum(['platform', 'map']),
  requestedBy: z
    .string()
    .regex(/^[A-Za-z0-9._@:-]{1,100}$/, 'must be 1-100 characters of A-Z a-z 0-9 . _ @ : -')
    .optional(),
});

export type ImportTenantInput = z.input<typeof importTenantInputSchema>;
export type ParsedImportTenantInput = z.output<typeof importTenantInputSchema>;

export interface ImportTenantResult {
  externalRef: string;
  subaccountId: string;
  /** `already_imported`: the records held this import already; nothing was written. */
  outcome: 'imported' | 'already_imported';
  status: 'active' | 'suspended';
  unmanagedKeys: string[];
  /** null: the platform showed no balance we could read (nothing entered in the ledger). */
  openingBalanceMicroUsd: string | null;
}

/**
 * adoptTenantKeys (`tenantctl rotate-key R --adopt`): a managed key for the slot, deployed and verified,
 * then each `unmanaged` key of the slot through rotation's quiet gate before it is revoked.
 */
export const adoptTenantKeysInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  slot: slotSchema.default('default'),
  deployer: deployerSpecSchema.optional(),
  reason: freeText({ min: 0, max: 500, multiline: true }).optional(),
  options: rotationTimingsSchema.optional(),
  /** Set by the run itself when it continues as new (its carried state); not for callers. */
  continued: continuedSchema,
});
export type AdoptTenantKeysInput = z.input<typeof adoptTenantKeysInputSchema>;
export type ParsedAdoptTenantKeysInput = z.output<typeof adoptTenantKeysInputSchema>;

export interface AdoptTenantKeysResult {
  externalRef: string;
  slot: string;
  /** completed: no unmanaged key is left; aborted: an operator kept the held ones. */
  outcome: 'completed' | 'aborted';
  keyId: string;
  fingerprint: string;
  revoked: string[];
  kept: string[];
}
