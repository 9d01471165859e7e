import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/index.js';
import { startNotifyReceiver, type NotifyReceiver } from './notify-receiver.js';

/**
 * Rotation out of the box: the default `notify` deployer needs the parent's endpoint, which a fresh
 * clone does not have. Unless a deployer is configured, the dev stack runs a receiver of its own
 * (it verifies `X-Tpo-Signature`, answers 204, and appends what it got — ids and fingerprints, no
 * token — to DATA_DIR/notify-received.jsonl) and points the worker and a second shell at it.
 */
export interface DevNotify {
  receiver?: NotifyReceiver;
  /** ROTATION_* settings for the worker and stack.json. */
  env: Record<string, string>;
  /** For the banner: which deployer rotations use here and where keys go. */
  description: string;
}

export const NOTICES_FILE = 'notify-received.jsonl';

export async function startDevNotifyReceiver(input: {
  config: Config;
  dataDir: string;
  say: (line: string) => void;
}): Promise<DevNotify> {
  const { config, dataDir, say } = input;
  if (config.ROTATION_DEPLOYER === 'project-env') {
    return {
      env: { ROTATION_DEPLOYER: 'project-env' },
      description: `project-env (writes ${config.ROTATION_ENV_VAR} into the tenant's project environment)`,
    };
  }
  if (config.ROTATION_NOTIFY_URL && config.ROTATION_NOTIFY_SECRET) {
    return {
      env: { ROTATION_DEPLOYER: 'notify' },
      description:
        `notify, signed keyRotated notices to ` + `${new URL(config.ROTATION_NOTIFY_URL).origin} (ROTATION_NOTIFY_URL)`,
    };
  }
  const file = join(dataDir, NOTICES_FILE);
  const receiver = await startNotifyReceiver({
    keep: 1_000,
    onNotice: (notice) => {
      appendFileSync(file, `${JSON.stringify(notice)}\n`, { mode: 0o600 });
      const target =
        `${String(notice.externalRef)} slot ${String(notice.slot)} generation ` + `${String(notice.generation)}`;
      say(
        `notify receiver: ${notice.event} for ` +
          `${target}${notice.signatureValid ? '' : ' REFUSED (bad X-Tpo-Signature)'}`,
      );
    },
  });
  return {
    receiver,
    env: { ROTATION_DEPLOYER: 'notify', ROTATION_NOTIFY_URL: receiver.url, ROTATION_NOTIFY_SECRET: receiver.secret },
    description:
      `notify, to the dev stack's own receiver ${receiver.url} (verifies ` + `X-Tpo-Signature; notices in ${file})`,
  };
}
