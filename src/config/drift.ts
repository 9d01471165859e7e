import { z } from 'zod';
import { parseDriftPolicies } from '../domain/drift-policy.js';
import { FIX_OF_KIND } from '../domain/drift-kinds.js';
import { DEFAULTS } from './defaults.js';
import { area, duration, emptyToUndefined, setting, type ShapeOf } from './helpers.js';

const DURATION_RULE = 'must be a duration like 30m, 12h or 90d';

export const driftSettings = area('drift', {
  DRIFT_POLICY: setting(
    z.preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          for (const problem of parseDriftPolicies(value).problems) ctx.addIssue({ code: 'custom', message: problem });
        })
        .default(DEFAULTS.DRIFT_POLICY),
    ),
    {
      description:
        'Drift fixes, `kind=report|fix` comma-separated; fixable: ' +
        `${Object.keys(FIX_OF_KIND)
          .map((kind) => `\`${kind}\``)
          .join(', ')}.`,
      unset: 'report everything',
    },
  ),
  DRIFT_QUIET_PERIOD: setting(duration(DURATION_RULE, DEFAULTS.DRIFT_QUIET_PERIOD), {
    description: 'An orphan key of ours is revoked by the drift fix (when it is on) only after no use for this long.',
    advanced: true,
  }),
  DRIFT_ROTATION_MAX_AGE: setting(duration(DURATION_RULE, DEFAULTS.DRIFT_ROTATION_MAX_AGE), {
    description: 'An active key older than this with no rotation schedule is reported (`key_rotation_overdue`).',
    advanced: true,
  }),
  DRIFT_SCHEDULE_EVERY: setting(duration(DURATION_RULE, DEFAULTS.DRIFT_SCHEDULE_EVERY), {
    description: 'Default interval of `tenantctl drift schedule create` (the fleet check).',
  }),
});

export type DriftConfig = z.infer<z.ZodObject<ShapeOf<typeof driftSettings.settings>>>;
