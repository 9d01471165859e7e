import type { Command } from 'commander';
import type { WebhookManagementDeps, WebhookView } from '../../client/webhook-management.js';
import type { CliRuntime } from '../runtime.js';
import { printJson, withRuntime } from '../run.js';

// Each action loads what it uses (see run.ts): `tenantctl --help` loads none of it.
const management = () => import('../../client/webhook-management.js');

/**
 * Webhook management needs a personal token (contract rule 6), the vault, and the gateway's public URL. With
 * `projectCheck`, `create --tenant` first proves the project is that tenant's, with the parent's platform key from
 * our records (else PLATFORM_API_KEY as it is: read-only, it imports nothing), so a rotated parent key is used as
 * every other process uses it. `close()` when done.
 */
async function managementDeps(
  runtime: CliRuntime,
  options: { projectCheck?: boolean } = {},
): Promise<{ deps: WebhookManagementDeps; close(): Promise<void> }> {
  const [{ ConfigError }, { createPlatformClient }, { createVault }, { cliPlatformClientOf }, { masterKeysOf }] =
    await Promise.all([
      import('../../config.js'),
      import('../../platform/index.js'),
      import('../../secrets/vault.js'),
      import('../../main/wiring/deps.js'),
      import('../../main/wiring/data-converter.js'),
    ]);
  const gateway = runtime.config;
  const keys = masterKeysOf(runtime.config);
  const problems: string[] = [];
  if (!runtime.config.PLATFORM_BASE_URL) problems.push('PLATFORM_BASE_URL: is required for webhook management');
  if (!gateway.PLATFORM_PERSONAL_TOKEN)
    problems.push(
      'PLATFORM_PERSONAL_TOKEN: is required for webhook management (the contract requires a personal token, sv_...)',
    );
  if (!gateway.GATEWAY_PUBLIC_URL)
    problems.push('GATEWAY_PUBLIC_URL: is required for webhook management (receiver URLs are built from it)');
  if (!keys) problems.push('SECRETS_KEYS: is required for webhook management (webhook secrets are sealed with it)');
  if (problems.length > 0) throw new ConfigError(problems);
  const deps: WebhookManagementDeps = {
    pool: runtime.pool(),
    platform: createPlatformClient({
      baseUrl: runtime.config.PLATFORM_BASE_URL!,
      personalToken: gateway.PLATFORM_PERSONAL_TOKEN!,
      timeoutMs: runtime.config.PLATFORM_TIMEOUT_MS,
    }),
    vault: createVault(keys!),
    publicUrl: gateway.GATEWAY_PUBLIC_URL!,
  };
  if (!options.projectCheck) return { deps, close: async () => {} };
  // The tenant's project is checked whenever a parent key is known; a fresh install with none skips the check.
  const owner = await cliPlatformClientOf(runtime.config, runtime.pool(), { readOnly: true }).catch(
    (error: unknown) => {
      if (error instanceof ConfigError) return null;
      throw error;
    },
  );
  if (!owner) return { deps, close: async () => {} };
  return { deps: { ...deps, projectOwner: owner.platform }, close: owner.close };
}

const eventList = (value: string) =>
  value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');

function printWebhook(view: WebhookView, json: boolean | undefined): void {
  if (json) return printJson(view);
  const previous = view.previousWebhookId ? ` (previous ${view.previousWebhookId} still accepted)` : '';
  console.log(
    `${view.registrationId} ${view.status.padEnd(9)} ${view.webhookId ?? '-'}${previous} ` +
      `${view.externalRef ?? '(parent)'} ${view.projectId} [${view.events.join(',')}] ` +
      `${view.url}`,
  );
}

export function registerWebhookCommands(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("registry webhooks on a tenant's project, received by the gateway (personal token)");

  webhooks
    .command('create')
    .description(
      'create a webhook whose receiver is this gateway, with a strong generated secret (sealed, never shown)',
    )
    .requiredOption('--project <projectId>', 'the project whose registry events to receive')
    .option('--tenant <externalRef>', "the tenant owning the project (omit for the parent's own project)")
    .option('--label <label>', 'label shown on the platform', 'tenant-orchestrator')
    .option('--events <list>', 'comma-separated event names, or *', '*')
    .option('--json', 'print JSON')
    .action(async (opts: { project: string; tenant?: string; label: string; events: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { createRegistryWebhook } = await management();
        const { deps, close } = await managementDeps(runtime, { projectCheck: opts.tenant !== undefined });
        try {
          const view = await createRegistryWebhook(deps, {
            projectId: opts.project,
            label: opts.label,
            events: eventList(opts.events),
            ...(opts.tenant ? { externalRef: opts.tenant } : {}),
          });
          printWebhook(view, opts.json);
        } finally {
          await close();
        }
      }),
    );

  webhooks
    .command('list')
    .description('webhooks in our records (no secrets)')
    .option('--tenant <externalRef>', 'only this tenant')
    .option('--all', 'include deleted ones')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant?: string; all?: boolean; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { listRegistryWebhooks } = await management();
        const views = await listRegistryWebhooks(
          { pool: runtime.pool() },
          { ...(opts.tenant ? { externalRef: opts.tenant } : {}), includeDeleted: opts.all ?? false },
        );
        if (opts.json) printJson(views);
        else for (const view of views) printWebhook(view, false);
      }),
    );

  webhooks
    .command('update')
    .description(
      'change label or events in place, or --rotate-secret: replace the webhook with ' +
        'one under a new secret, losing no delivery',
    )
    .argument('<registrationId>')
    .option('--label <label>')
    .option('--events <list>', 'comma-separated event names, or *')
    .option('--rotate-secret', 'replace the webhook (new secret); the old secret stays accepted for the grace period')
    .option('--json', 'print JSON')
    .action(
      async (
        registrationId: string,
        opts: { label?: string; events?: string; rotateSecret?: boolean; json?: boolean },
      ) =>
        withRuntime(async (runtime) => {
          const { updateRegistryWebhook, replaceRegistryWebhook } = await management();
          const { deps } = await managementDeps(runtime);
          let view: WebhookView | undefined;
          if (opts.label !== undefined || opts.events !== undefined) {
            view = await updateRegistryWebhook(deps, {
              registrationId,
              ...(opts.label ? { label: opts.label } : {}),
              ...(opts.events ? { events: eventList(opts.events) } : {}),
            });
          }
          if (opts.rotateSecret) view = await replaceRegistryWebhook(deps, { registrationId });
          if (!view) throw new Error('nothing to update: give --label, --events or --rotate-secret');
          printWebhook(view, opts.json);
        }),
    );

  webhooks
    .command('delete')
    .description('delete the webhook on the platform; its secret stays accepted for the grace period (retries)')
    .argument('<registrationId>')
    .option('--json', 'print JSON')
    .action(async (registrationId: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { deleteRegistryWebhook } = await management();
        printWebhook(await deleteRegistryWebhook((await managementDeps(runtime)).deps, { registrationId }), opts.json);
      }),
    );

  webhooks
    .command('deliveries')
    .description("the platform's delivery history beside our inbox's record of each delivery")
    .argument('<registrationId>')
    .option('--json', 'print JSON')
    .action(async (registrationId: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { listRegistryDeliveries } = await management();
        const views = await listRegistryDeliveries((await managementDeps(runtime)).deps, { registrationId });
        if (opts.json) printJson(views);
        else
          for (const d of views)
            console.log(
              `${d.deliveryId} ${d.event ?? '?'} platform:${d.platformStatus ?? '?'}(${d.responseCode ?? '-'}) ` +
                `inbox:${d.inboxState ?? 'absent'}`,
            );
      }),
    );
}
