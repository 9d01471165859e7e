import { z } from 'zod';
import { DEFAULTS } from './defaults.js';
import { area, choice, emptyToUndefined, httpUrl, matching, setting } from './helpers.js';

const apiPath = () =>
  matching(/^\/[A-Za-z0-9/:._-]*:projectId[A-Za-z0-9/:._-]*$/, 'must be a path containing :projectId');

export const ROTATION_DEPLOYERS = ['notify', 'project-env'] as const;

export const rotationSettings = area('rotation', {
  ROTATION_DEPLOYER: setting(choice(ROTATION_DEPLOYERS, DEFAULTS.ROTATION_DEPLOYER), {
    description:
      'How a rotated key reaches consumers when the rotation names no deployer: `notify` (a signed ' +
      '`keyRotated` POST to `ROTATION_NOTIFY_URL`; the vault stays the source of truth) or `project-env` (the ' +
      'tenant project env var).',
  }),
  ROTATION_NOTIFY_URL: setting(httpUrl('must be an http(s) URL'), {
    description:
      "The parent's endpoint that receives signed `keyRotated` notices (ids and fingerprint, never the token); " +
      'held to the outbound rule (`OUTBOUND_ALLOW_HOSTS`).',
    unset: 'none (the notify deployer refuses)',
    devStack: 'its own receiver',
  }),
  ROTATION_NOTIFY_SECRET: setting(
    z.preprocess(emptyToUndefined, z.string().min(16, 'must be at least 16 characters').optional()),
    {
      description: 'HMAC-SHA256 secret for the `X-Tpo-Signature` header of `keyRotated` notices.',
      secret: true,
      unset: 'none (the notify deployer refuses)',
      devStack: 'a dev secret',
    },
  ),
  ROTATION_ENV_VAR: setting(
    matching(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, 'must be an environment variable name', DEFAULTS.ROTATION_ENV_VAR),
    { description: 'Env var the `project-env` deployer writes the tenant key into, when the rotation names none.' },
  ),
  ROTATION_ENV_VARS_GET_PATH: setting(apiPath(), {
    description: "Platform path to read a project's env vars, when it differs from the contract's.",
    advanced: true,
    unset: '`/projects/:projectId/env-vars`',
  }),
  ROTATION_ENV_VARS_PUT_PATH: setting(apiPath(), {
    description: "Platform path to replace a project's env vars, when it differs from the contract's.",
    advanced: true,
    unset: '`/projects/:projectId/env-vars/update`',
  }),
});

/** The rotation settings as the schema gives them (what buildRotationOptions reads). */
export interface RotationConfig {
  ROTATION_DEPLOYER: (typeof ROTATION_DEPLOYERS)[number];
  ROTATION_NOTIFY_URL?: string | undefined;
  ROTATION_NOTIFY_SECRET?: string | undefined;
  ROTATION_ENV_VAR: string;
  ROTATION_ENV_VARS_GET_PATH?: string | undefined;
  ROTATION_ENV_VARS_PUT_PATH?: string | undefined;
}
