import type { z } from 'zod';
import { readMasterKeyEntries } from '../domain/master-key-entries.js';
import { DEFAULTS } from './defaults.js';
import { area, checkedText, choice, setting } from './helpers.js';

export const secretsSettings = area('secrets', {
  SECRETS_KEYS: setting(
    checkedText((value) => {
      return readMasterKeyEntries(value, () => null).problems;
    }) as z.ZodType<string | undefined>,
    {
      description:
        'Master keys for the vault and the payload codec, `keyId:base64(32 bytes)` comma-separated; the first ' +
        'seals, all open (`tenantctl secrets generate-key k2026a`).',
      secret: true,
      unset: 'none (the worker and gateway refuse to start)',
      devStack: 'a dev key in `.data/dev-master-key`',
    },
  ),
  PAYLOAD_CODEC: setting(choice(['auto', 'on', 'off'], DEFAULTS.PAYLOAD_CODEC), {
    description:
      'Encrypt every Temporal payload with `SECRETS_KEYS`: `auto` (when keys are set), `on` (required), `off`.',
  }),
});
