import type { Command } from 'commander';
import type { DeliveryView, SubscriptionView } from '../../client/events/events.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';
import { inFlags } from './top-ups.js';

/**
 * `tenantctl events ...`: clients of the gateway's /v1 event routes. A subscription belongs to the
 * token's name that made it (others see it only as an admin); signing secrets are sealed and opened
 * by the server, and the retry and overlap policies are the server's.
 */
const typeList = (value: string) =>
  value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');

async function refused(problem: string): Promise<never> {
  const { InvalidInputError } = await import('../../domain/tenant-input.js');
  throw new InvalidInputError([problem]);
}

export function registerEventCommands(program: Command): void {
  const group = program
    .command('events')
    .description('lifecycle events for the parent: subscriptions (Standard Webhooks), deliveries, replays');

  group
    .command('subscribe')
    .description('send events to a URL, signed the Standard Webhooks way; prints the signing secret ONCE')
    .requiredOption(
      '--url <url>',
      'https URL of the receiver, at a public address: a host that is or resolves to a loopback, private, ' +
        'link-local or metadata address is refused (checked when given and again at connect, after DNS) unless ' +
        "the server's OUTBOUND_ALLOW_HOSTS lists it; plain http only to a loopback host listed there",
    )
    .requiredOption('--types <list>', 'comma-separated event types, or * for all')
    .option('--label <label>', 'a note for operators', '')
    .option('--json', 'print JSON')
    .action(async (opts: { url: string; types: string; label: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        // It is the token's name's subscription (created_by): its owner lists, rotates and deletes it.
        const result = await gateway
          .post<{ subscription: SubscriptionView; secret: string }>('/v1/event-subscriptions', {
            url: opts.url,
            types: typeList(opts.types),
            label: opts.label,
          })
          .catch(async (error: unknown) =>
            // A subscription like it exists (409): said as the input to change, as before (exit 2).
            (error as { code?: string }).code === 'SUBSCRIPTION_DUPLICATE'
              ? refused((error as Error).message)
              : Promise.reject(error),
          );
        if (opts.json) return printJson(result);
        printLine(
          `subscribed ${result.subscription.id} [${result.subscription.types.join(',')}] ${result.subscription.url}`,
        );
        printLine(`signing secret (shown once, store it in the receiver): ${result.secret}`);
      }),
    );

  group
    .command('list')
    .description('live subscriptions (--all: deleted ones too); yours, or everyone’s for an admin')
    .option('--all', 'include deleted subscriptions')
    .option('--json', 'print JSON')
    .action(async (opts: { all?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const views = await gateway.get<SubscriptionView[]>('/v1/event-subscriptions', {
          ...(opts.all ? { all: true } : {}),
        });
        if (opts.json) return printJson(views);
        if (views.length === 0) printLine('no subscriptions');
        for (const v of views)
          printLine(
            `${v.id} ${v.status.padEnd(7)} [${v.types.join(',')}] ` +
              `${v.url}${v.label ? ` (${v.label})` : ''}${v.signingSecrets > 1 ? ' rotating: two signatures' : ''}`,
          );
      }),
    );

  group
    .command('delete')
    .description('stop sending to a subscription; its pending deliveries end as failed')
    .argument('<subscriptionId>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const { data: view } = await gateway.call<SubscriptionView>('DELETE', `/v1/event-subscriptions/${segment(id)}`);
        if (opts.json) return printJson(view);
        printLine(`deleted ${view.id}`);
      }),
    );

  group
    .command('rotate-secret')
    .description(
      'a new signing secret (printed once); the old one keeps signing during the overlap: both signatures are sent',
    )
    .argument('<subscriptionId>')
    .option(
      '--overlap <seconds>',
      "how long the old secret keeps signing (default: the server's EVENTS_SECRET_OVERLAP_SECONDS)",
    )
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { overlap?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const result = await inFlags(
          gateway.post<{ subscription: SubscriptionView; secret: string; previousValidUntil: string }>(
            `/v1/event-subscriptions/${segment(id)}/rotate-secret`,
            opts.overlap === undefined ? {} : { overlapSeconds: Number(opts.overlap) },
          ),
          { overlapSeconds: '--overlap' },
        );
        if (opts.json) return printJson(result);
        printLine(`${result.subscription.id}: secret generation ${result.subscription.secretGeneration}`);
        printLine(`new signing secret (shown once): ${result.secret}`);
        printLine(`the previous secret also signs until ${result.previousValidUntil}`);
      }),
    );

  group
    .command('deliveries')
    .description('recent deliveries, newest first (--failed: only those that ran out of retries)')
    .option('--failed', 'only failed deliveries')
    .option('--subscription <id>', 'only this subscription')
    .option('--event <eventId>', 'only this event (evt_...)')
    .option('--limit <n>', 'at most this many', '50')
    .option('--json', 'print JSON')
    .action(async (opts: { failed?: boolean; subscription?: string; event?: string; limit: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const views = await inFlags(
          gateway.get<DeliveryView[]>('/v1/event-deliveries', {
            ...(opts.failed ? { failed: true } : {}),
            subscription: opts.subscription,
            event: opts.event,
            limit: Math.min(Math.max(Number(opts.limit) || 50, 1), 1000),
          }),
          { event: '--event' },
        );
        if (opts.json) return printJson(views);
        if (views.length === 0) printLine(opts.failed ? 'no failed deliveries' : 'no deliveries');
        for (const d of views)
          printLine(
            `${d.id} ${d.state.padEnd(9)} ${d.eventId} ${d.type} ${d.tenant ?? '(parent)'} -> ` +
              `${d.subscriptionId} attempts=${d.attempts}${d.lastStatus ? ` last=${d.lastStatus}` : ''}` +
              (d.lastError && d.state !== 'delivered' ? ` (${d.lastError})` : ''),
          );
      }),
    );

  group
    .command('replay')
    .description(
      'send an event again with the same webhook-id (or every event since a time), e.g. after a receiver was down',
    )
    .argument('[eventId]', 'the event (evt_...)')
    .option('--since <time>', 'every event that occurred at or after this ISO 8601 time')
    .option('--subscription <id>', 'only to this subscription')
    .option('--json', 'print JSON')
    .action(async (eventId: string | undefined, opts: { since?: string; subscription?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        if ((eventId === undefined) === (opts.since === undefined))
          await refused('event: give one event id, or --since <time> (not both)');
        const narrowed = opts.subscription ? { subscriptionId: opts.subscription } : {};
        const result = await inFlags(
          eventId !== undefined
            ? gateway.post<{ reopened: number }>(`/v1/events/${segment(eventId, 'eventId')}/replay`, narrowed)
            : gateway.post<{ reopened: number }>('/v1/events/replay', { since: opts.since, ...narrowed }),
          { since: '--since', subscriptionId: '--subscription' },
        );
        if (opts.json) return printJson(result);
        printLine(`${result.reopened} deliveries queued again (same webhook-id)`);
      }),
    );

  group
    .command('low-balance')
    .description("a tenant's wallet.low_balance threshold (--default: back to EVENTS_LOW_BALANCE_MICRO_USD)")
    .argument('<externalRef>')
    .option('--below <microUsd>', 'alert when the balance is below this many micro-USD')
    .option('--default', 'use the default threshold')
    .action(async (externalRef: string, opts: { below?: string; default?: boolean }) =>
      withGateway(async (gateway) => {
        if ((opts.below === undefined) === !opts.default)
          await refused('below: give --below <microUsd> or --default (one of them)');
        const path = `/v1/tenants/${segment(externalRef, 'externalRef')}/low-balance`;
        await inFlags(
          opts.below !== undefined
            ? gateway.call('PUT', path, { body: { belowMicroUsd: opts.below } })
            : gateway.call('DELETE', path),
          { belowMicroUsd: '--below' },
        );
        printLine(`${externalRef}: low-balance threshold ${opts.below ?? 'default'}`);
      }),
    );
}
