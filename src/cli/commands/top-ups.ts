import type { Command } from 'commander';
import type { LedgerEntry } from '../../client/transfer-ledger.js';
import type { InvalidInputError as InvalidInputErrorClass } from '../../domain/tenant-input.js';
import { printJson, withRuntime } from '../run.js';

/** `tenantctl fund`, `transfers` and `wallet`: top-ups and the ledger, from the operator's terminal. */
const FLAG_OF: Record<string, string> = {
  amountMicroUsd: '--amount',
  idempotencyKey: '--key',
  reason: '--reason',
  requestedBy: '--operator',
  externalRef: 'externalRef',
};

/** Problems named by the flag the operator typed, not the input field behind it. */
export function asFlags(
  error: unknown,
  InvalidInputError: typeof InvalidInputErrorClass,
  flagOf: Record<string, string> = FLAG_OF,
): unknown {
  if (!(error instanceof InvalidInputError)) return error;
  return new InvalidInputError(
    error.problems.map((p) => p.replace(/^([A-Za-z]+):/, (_m, field: string) => `${flagOf[field] ?? field}:`)),
  );
}

function entryLine(t: LedgerEntry): string {
  const who = t.requestedBy ? ` by ${t.requestedBy}` : '';
  const why = t.reason ? ` ("${t.reason}")` : '';
  const key = t.idempotencyKey ? ` key ${t.idempotencyKey}` : '';
  const extra = [t.platformTransferId ? `transfer ${t.platformTransferId}` : null, t.failureCode, t.resolution]
    .filter(Boolean)
    .join(', ');
  return (
    `${t.createdAt}  ${t.purpose.padEnd(7)} ${t.amountMicroUsd.padStart(14)} ` +
    `micro-USD  ${t.state.padEnd(14)}${key}${who}${why}${extra ? ` [${extra}]` : ''}`
  );
}

export function registerTopUpCommands(program: Command): void {
  program
    .command('fund')
    .description(
      "top up a tenant's wallet exactly once per --key (a replay of the key answers with its recorded transfer)",
    )
    .argument('<externalRef>')
    .requiredOption('--amount <microUsd>', 'micro-USD as a whole number (e.g. 5000000 = 5 USD)')
    .requiredOption('--key <idempotencyKey>', 'your idempotency key for this top-up (1-255 of A-Z a-z 0-9 . _ -)')
    .option('--reason <text>', 'why (recorded)')
    .option('--operator <name>', 'who acts (audited); only without an OPERATORS list, where the token says who')
    .option('--wait', 'wait until the transfer settles and print it')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: { amount: string; key: string; reason?: string; operator?: string; wait?: boolean; json?: boolean },
      ) =>
        withRuntime(async (runtime) => {
          const [
            { startTopUp },
            { precheckTopUp },
            { getTransferLedger, ledgerEntryOf },
            { InvalidInputError, parseInput },
            { fundTenantInputSchema },
          ] = await Promise.all([
            import('../../client/start-top-up.js'),
            import('../../client/top-up-precheck.js'),
            import('../../client/transfer-ledger.js'),
            import('../../domain/tenant-input.js'),
            import('../../domain/top-up-input.js'),
          ]);
          const input = {
            externalRef,
            idempotencyKey: opts.key,
            amountMicroUsd: opts.amount,
            requestedBy: runtime.operator(opts.operator, 'tenantctl'),
            ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
          };
          try {
            parseInput(fundTenantInputSchema, input);
          } catch (error) {
            throw asFlags(error, InvalidInputError);
          }
          const limit = { maxTransferMicroUsd: runtime.config.TRANSFER_MAX_MICRO_USD };
          const recorded = await precheckTopUp(runtime.pool(), input, limit).catch((error: unknown) =>
            Promise.reject(asFlags(error, InvalidInputError)),
          );
          let workflowId: string | null = null;
          let started = false;
          if (!recorded || opts.wait) {
            const handle = await startTopUp(await runtime.client(), input, {
              taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
              ...limit,
            });
            workflowId = handle.workflowId;
            started = handle.started;
            if (opts.wait) await handle.result();
          }
          const { transfers } = await getTransferLedger(runtime.pool(), externalRef);
          const entry =
            transfers.find((t) => t.idempotencyKey === opts.key) ?? (recorded ? ledgerEntryOf(recorded) : null);
          if (opts.json)
            printJson({
              externalRef,
              idempotencyKey: opts.key,
              workflowId,
              started,
              replayed: recorded !== undefined,
              transfer: entry,
            });
          else if (entry)
            console.log(`${started ? 'started' : recorded ? 'already recorded' : 'joined'}: ${entryLine(entry)}`);
          else
            console.log(
              `${started ? 'started' : 'already running'}: ${workflowId} (follow with: ` +
                `tenantctl transfers ${externalRef})`,
            );
        }),
    );

  program
    .command('transfers')
    .description(
      "a tenant's ledger: every transfer with its purpose (initial, top-up, auto), state, keys, who asked and why",
    )
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { getTransferLedger } = await import('../../client/transfer-ledger.js');
        const ledger = await getTransferLedger(runtime.pool(), externalRef);
        if (opts.json) return printJson(ledger);
        for (const t of ledger.transfers) console.log(entryLine(t));
        console.log(`succeeded in total: ${ledger.succeededMicroUsd} micro-USD`);
      }),
    );

  program
    .command('wallet')
    .description("read the tenant's wallet on the platform and compare it with our ledger")
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ compareWallet }, { cliPlatformClientOf }] = await Promise.all([
          import('../../client/transfer-ledger.js'),
          import('../../main/wiring/deps.js'),
        ]);
        // The parent key comes from our records (PLATFORM_API_KEY only bootstraps them).
        const { platform, close } = await cliPlatformClientOf(runtime.config, runtime.pool());
        const view = await compareWallet({ pool: runtime.pool(), platform }, externalRef).finally(close);
        if (opts.json) return printJson(view);
        console.log(
          `wallet of ${externalRef} (${view.subaccountId}): ${view.balanceMicroUsd ?? 'balance not shown'} micro-USD`,
        );
        console.log(`our ledger (succeeded transfers): ${view.recordedInMicroUsd} micro-USD`);
        if (view.differenceMicroUsd !== null)
          console.log(
            `difference (wallet − ledger): ${view.differenceMicroUsd} micro-USD${BigInt(view.differenceMicroUsd) < 0n ? ' (spent by the tenant)' : ''}`,
          );
        for (const t of view.unrecordedTransfers)
          console.log(
            `not ours: transfer ${t.id ?? '?'} of ${t.amountMicroUsd ?? '?'} under key ${t.idempotencyKey ?? '(none)'}`,
          );
        if (view.missingFromWallet?.length)
          console.log(`not in the wallet's recent transfers: ${view.missingFromWallet.join(', ')}`);
        console.log(
          view.drift ? `drift: ${view.drift} (money in that we did not record; reconcile with billing)` : 'drift: none',
        );
      }),
    );
}
