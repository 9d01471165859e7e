import type { Command } from 'commander';
import type { CliRuntime } from '../runtime.js';
import { printJson, withRuntime } from '../run.js';

// Each action loads what it uses (see run.ts): `tenantctl --help` loads none of it.
const events = () => import('../../client/events.js');

async function vaultOf(runtime: CliRuntime) {
  const [{ ConfigError }, { createVault }, { masterKeysOf }] = await Promise.all([
    import('../../config.js'),
    import('../../secrets/vault.js'),
    import('../../main/wiring/data-converter.js'),
  ]);
  const keys = masterKeysOf(runtime.config);
  if (!keys) throw new ConfigError(['SECRETS_KEYS: is required (subscription secrets are sealed with it)']);
  return createVault(keys);
}

const typeList = (value: string) =>
  value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');

export function registerEventCommands(program: Command): void {
  const group = program
    .command('events')
    .description('lifecycle events for the parent: subscriptions (Standard Webhooks), deliveries, replays');

  group
    .command('subscribe')
    .description('send events to a URL, signed the Standard Webhooks way; prints the signing secret ONCE')
    .requiredOption('--url <url>', 'https URL of the receiver (plain http only to localhost)')
    .requiredOption('--types <list>', 'comma-separated event types, or * for all')
    .option('--label <label>', 'a note for operators', '')
    .option('--operator <name>', 'who subscribes (recorded)', 'operator')
    .option('--json', 'print JSON')
    .action(async (opts: { url: string; types: string; label: string; operator: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { subscribeToEvents } = await events();
        const result = await subscribeToEvents(
          { pool: runtime.pool(), vault: await vaultOf(runtime), allowHosts: runtime.config.OUTBOUND_ALLOW_HOSTS },
          { url: opts.url, types: typeList(opts.types), label: opts.label },
          `operator:${opts.operator}`,
        );
        if (opts.json) return printJson(result);
        console.log(
          `subscribed ${result.subscription.id} [${result.subscription.types.join(',')}] ${result.subscription.url}`,
        );
        console.log(`signing secret (shown once, store it in the receiver): ${result.secret}`);
      }),
    );

  group
    .command('list')
    .description('live subscriptions (--all: deleted ones too)')
    .option('--all', 'include deleted subscriptions')
    .option('--json', 'print JSON')
    .action(async (opts: { all?: boolean; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { listEventSubscriptions } = await events();
        const views = await listEventSubscriptions(runtime.pool(), opts.all ?? false);
        if (opts.json) return printJson(views);
        if (views.length === 0) console.log('no subscriptions');
        for (const v of views)
          console.log(
            `${v.id} ${v.status.padEnd(7)} [${v.types.join(',')}] ${v.url}${v.label ? ` (${v.label})` : ''}${v.signingSecrets > 1 ? ' rotating: two signatures' : ''}`,
          );
      }),
    );

  group
    .command('delete')
    .description('stop sending to a subscription; its pending deliveries end as failed')
    .argument('<subscriptionId>')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { deleteEventSubscription } = await events();
        const view = await deleteEventSubscription(runtime.pool(), id);
        if (opts.json) return printJson(view);
        console.log(`deleted ${view.id}`);
      }),
    );

  group
    .command('rotate-secret')
    .description(
      'a new signing secret (printed once); the old one keeps signing during the overlap: both signatures are sent',
    )
    .argument('<subscriptionId>')
    .option('--overlap <seconds>', 'how long the old secret keeps signing (default EVENTS_SECRET_OVERLAP_SECONDS)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { overlap?: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { rotateSubscriptionSecret } = await events();
        const overlap =
          opts.overlap === undefined ? runtime.config.EVENTS_SECRET_OVERLAP_SECONDS : Number(opts.overlap);
        const result = await rotateSubscriptionSecret(
          { pool: runtime.pool(), vault: await vaultOf(runtime) },
          id,
          overlap,
        );
        if (opts.json) return printJson(result);
        console.log(`${result.subscription.id}: secret generation ${result.subscription.secretGeneration}`);
        console.log(`new signing secret (shown once): ${result.secret}`);
        console.log(`the previous secret also signs until ${result.previousValidUntil}`);
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
      withRuntime(async (runtime) => {
        const { listEventDeliveries } = await events();
        const views = await listEventDeliveries(runtime.pool(), {
          failedOnly: opts.failed ?? false,
          ...(opts.subscription ? { subscriptionId: opts.subscription } : {}),
          ...(opts.event ? { eventId: opts.event } : {}),
          limit: Math.min(Math.max(Number(opts.limit) || 50, 1), 1000),
        });
        if (opts.json) return printJson(views);
        if (views.length === 0) console.log(opts.failed ? 'no failed deliveries' : 'no deliveries');
        for (const d of views)
          console.log(
            `${d.id} ${d.state.padEnd(9)} ${d.eventId} ${d.type} ${d.tenant ?? '(parent)'} -> ` +
              `${d.subscriptionId} attempts=${d.attempts}${d.lastStatus ? ` last=${d.lastStatus}` : ''}${d.lastError && d.state !== 'delivered' ? ` (${d.lastError})` : ''}`,
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
      withRuntime(async (runtime) => {
        const [{ replayEvents }, { InvalidInputError }] = await Promise.all([
          events(),
          import('../../domain/tenant-input.js'),
        ]);
        if ((eventId === undefined) === (opts.since === undefined))
          throw new InvalidInputError(['event: give one event id, or --since <time> (not both)']);
        const result = await replayEvents(
          { pool: runtime.pool(), client: await runtime.client(), taskQueue: runtime.config.TEMPORAL_TASK_QUEUE },
          eventId !== undefined ? { eventId } : { since: opts.since! },
          {
            ...(opts.subscription ? { subscriptionId: opts.subscription } : {}),
            policy: { retryFor: runtime.config.EVENTS_RETRY_FOR },
          },
        );
        if (opts.json) return printJson(result);
        console.log(`${result.reopened} deliveries queued again (same webhook-id)`);
      }),
    );

  group
    .command('low-balance')
    .description("a tenant's wallet.low_balance threshold (--default: back to EVENTS_LOW_BALANCE_MICRO_USD)")
    .argument('<externalRef>')
    .option('--below <microUsd>', 'alert when the balance is below this many micro-USD')
    .option('--default', 'use the default threshold')
    .action(async (externalRef: string, opts: { below?: string; default?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ setLowBalanceThreshold }, { InvalidInputError }, { getTenant }] = await Promise.all([
          import('../../db/wallet-alerts-store.js'),
          import('../../domain/tenant-input.js'),
          import('../../db/tenants-store.js'),
        ]);
        if ((opts.below === undefined) === !opts.default)
          throw new InvalidInputError(['below: give --below <microUsd> or --default (one of them)']);
        if (opts.below !== undefined && !/^[1-9][0-9]{0,29}$/.test(opts.below))
          throw new InvalidInputError(['below: must be a positive whole number of micro-USD']);
        await getTenant(runtime.pool(), externalRef);
        await setLowBalanceThreshold(runtime.pool(), externalRef, opts.below ?? null);
        console.log(`${externalRef}: low-balance threshold ${opts.below ?? 'default'}`);
      }),
    );
}
