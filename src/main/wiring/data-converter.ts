import type { DataConverter } from '@temporalio/common';
import type { Config } from '../../config/index.js';
import { ConfigError } from '../../config/index.js';
import { parseMasterKeys, type MasterKeyRing } from '../../secrets/master-keys.js';
import { createDataConverter } from '../../secrets/payload-codec.js';

// Not in deps.ts: a CLI command's Temporal client loads this without the logger and the platform client.
export function masterKeysOf(config: Pick<Config, 'SECRETS_KEYS'>): MasterKeyRing | undefined {
  return config.SECRETS_KEYS ? parseMasterKeys(config.SECRETS_KEYS) : undefined;
}

/** The one data converter of client, worker and CLI: encrypted payloads whenever keys are configured. */
export function dataConverterOf(config: Pick<Config, 'SECRETS_KEYS' | 'PAYLOAD_CODEC'>): DataConverter | undefined {
  if (config.PAYLOAD_CODEC === 'off') return undefined;
  const keys = masterKeysOf(config);
  if (!keys && config.PAYLOAD_CODEC === 'on')
    throw new ConfigError(['PAYLOAD_CODEC: is on but SECRETS_KEYS is not set']);
  return keys ? createDataConverter(keys) : undefined;
}
