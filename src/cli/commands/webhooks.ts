import type { Command } from 'commander';
import type { DeliveryView, WebhookView } from '../../client/webhooks/webhook-management.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

/**
 * Registry webhooks through the gateway (`/v1/webhooks`, permission webhooks.manage): the gateway holds the
 * parent's personal token and platform key, builds the receiver URL, and generates and seals the secret, which
 * no answer carries. The token says who acts.
 */
const eventList = (value: string) =>
  value
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');

function printWebhook(view: WebhookView, json: boolean | undefined): void {
  if (json) return printJson(view);
  const previous = view.previousWebhookId ? ` (previous ${view.previousWebhookId} still accepted)` : '';
  printLine(
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
      withGateway(async (gateway) => {
        const view = await gateway.post<WebhookView>('/v1/webhooks', {
          projectId: opts.project,
          label: opts.label,
          events: eventList(opts.events),
          ...(opts.tenant ? { externalRef: opts.tenant } : {}),
        });
        printWebhook(view, opts.json);
      }),
    );

  webhooks
    .command('list')
    .description('webhooks in our records (no secrets)')
    .option('--tenant <externalRef>', 'only this tenant')
    .option('--all', 'include deleted ones')
    .option('--json', 'print JSON')
    .action(async (opts: { tenant?: string; all?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const views = await gateway.get<WebhookView[]>('/v1/webhooks', {
          externalRef: opts.tenant,
          includeDeleted: opts.all ?? false,
        });
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
        withGateway(async (gateway) => {
          if (opts.label === undefined && opts.events === undefined && !opts.rotateSecret) {
            const { InvalidInputError } = await import('../../domain/tenant-input.js');
            throw new InvalidInputError(['nothing to update: give --label, --events or --rotate-secret']);
          }
          const path = `/v1/webhooks/${segment(registrationId, 'registrationId')}`;
          let view: WebhookView | undefined;
          if (opts.label !== undefined || opts.events !== undefined)
            view = (
              await gateway.call<WebhookView>('PATCH', path, {
                body: {
                  ...(opts.label !== undefined ? { label: opts.label } : {}),
                  ...(opts.events !== undefined ? { events: eventList(opts.events) } : {}),
                },
              })
            ).data;
          if (opts.rotateSecret) view = await gateway.post<WebhookView>(`${path}/rotate-secret`);
          printWebhook(view!, opts.json);
        }),
    );

  webhooks
    .command('delete')
    .description('delete the webhook on the platform; its secret stays accepted for the grace period (retries)')
    .argument('<registrationId>')
    .option('--json', 'print JSON')
    .action(async (registrationId: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const path = `/v1/webhooks/${segment(registrationId, 'registrationId')}`;
        printWebhook((await gateway.call<WebhookView>('DELETE', path)).data, opts.json);
      }),
    );

  webhooks
    .command('deliveries')
    .description("the platform's delivery history beside our inbox's record of each delivery")
    .argument('<registrationId>')
    .option('--json', 'print JSON')
    .action(async (registrationId: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const views = await gateway.get<DeliveryView[]>(
          `/v1/webhooks/${segment(registrationId, 'registrationId')}/deliveries`,
        );
        if (opts.json) printJson(views);
        else
          for (const d of views)
            printLine(
              `${d.deliveryId} ${d.event ?? '?'} platform:${d.platformStatus ?? '?'}(${d.responseCode ?? '-'}) ` +
                `inbox:${d.inboxState ?? 'absent'}`,
            );
      }),
    );
}
