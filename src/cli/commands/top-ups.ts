import type { Command } from 'commander';
import type { GatewayClient } from '../../api-client/gateway-client.js';
import type { LedgerEntry, WalletComparison } from '../../client/money/transfer-ledger.js';
import type { RunView } from '../../client/run-status.js';
import type { InvalidInputError as InvalidInputErrorClass } from '../../domain/tenant-input.js';
import { markRefused, resultOfRun } from '../poll-run.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

/** `tenantctl fund`, `transfers` and `wallet`: top-ups and the ledger, clients of the gateway's /v1 routes. */
const FLAG_OF: Record<string, string> = {
  amountMicroUsd: '--amount',
  idempotencyKey: '--key',
  'Idempotency-Key': '--key',
  reason: '--reason',
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
    error.problems.map((p) => p.replace(/^([A-Za-z0-9.-]+):/, (_m, field: string) => `${flagOf[field] ?? field}:`)),
  );
}

/**
 * A gateway call whose INVALID_INPUT answer is said in flags (one line a problem, exit 2); other errors as they are.
 */
export async function inFlags<T>(work: Promise<T>, flagOf: Record<string, string> = FLAG_OF): Promise<T> {
  try {
    return await work;
  } catch (error) {
    const invalid =
      error instanceof Error &&
      error.name === 'GatewayCallError' &&
      (error as { code?: string }).code === 'INVALID_INPUT';
    if (!invalid) throw error;
    const { InvalidInputError } = await import('../../domain/tenant-input.js');
    const problems = error.message.replace(/^invalid input: /, '').split('; ');
    throw asFlags(new InvalidInputError(problems), InvalidInputError, flagOf);
  }
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

/** The key's ledger entry, or null while its run has not written it yet. */
async function entryOf(gateway: GatewayClient, keyPath: string): Promise<LedgerEntry | null> {
  try {
    return await gateway.get<LedgerEntry>(keyPath);
  } catch (error) {
    if ((error as { code?: string }).code === 'TRANSFER_NOT_FOUND') return null;
    throw error;
  }
}

const isCode = (error: unknown, code: string) =>
  error instanceof Error && error.name === 'GatewayCallError' && (error as { code?: string }).code === code;

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
    .option('--wait', 'wait until the transfer settles and print it (exit 3 when a spend cap refuses it)')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: { amount: string; key: string; reason?: string; wait?: boolean; json?: boolean },
      ) =>
        withGateway(async (gateway) => {
          // The gateway checks the input, the limits and the key's record, and starts the run; who asks is the token's
          // name.
          const transfersPath = `/v1/tenants/${segment(externalRef, 'externalRef')}/transfers`;
          const keyPath = `${transfersPath}/${segment(opts.key, '--key')}`;
          let workflowId: string | null = null;
          let started = false;
          let entry: LedgerEntry | null = null;
          try {
            const answer = await inFlags(
              gateway.call<{ workflowId?: string; transfer?: LedgerEntry }>('POST', transfersPath, {
                body: { amountMicroUsd: opts.amount, ...(opts.reason !== undefined ? { reason: opts.reason } : {}) },
                headers: { 'Idempotency-Key': opts.key },
              }),
            );
            started = answer.status === 202;
            workflowId = answer.data.workflowId ?? null;
            entry = answer.data.transfer ?? null;
          } catch (error) {
            // A run of this key is under way: its intent may be written already (recorded) or not yet (joined).
            if (!isCode(error, 'TRANSFER_IN_PROGRESS')) throw error;
          }
          const recorded = !started && (entry ?? (await entryOf(gateway, keyPath))) !== null;
          if (opts.wait && !(entry && !started)) {
            // A cap's refusal is exit 3 (docs/exit-codes.md), as for every --wait.
            await resultOfRun(gateway, `${keyPath}/run`);
            entry = null;
          } else if (opts.wait && entry?.state === 'refused') markRefused(); // a replay answers as the first did
          entry ??= await entryOf(gateway, keyPath);
          if (opts.wait)
            workflowId ??= (await gateway.get<{ run: RunView | null }>(`${keyPath}/run`)).run?.workflowId ?? null;
          if (opts.json)
            printJson({
              externalRef,
              idempotencyKey: opts.key,
              workflowId,
              started,
              replayed: recorded,
              transfer: entry,
            });
          else if (entry)
            printLine(`${started ? 'started' : recorded ? 'already recorded' : 'joined'}: ${entryLine(entry)}`);
          else
            printLine(
              `${started ? 'started' : 'already running'}: ${workflowId ?? `the top-up under key ${opts.key}`} ` +
                `(follow with: tenantctl transfers ${externalRef})`,
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
      withGateway(async (gateway) => {
        const ledger = await gateway.get<{ transfers: LedgerEntry[]; succeededMicroUsd: string }>(
          `/v1/tenants/${segment(externalRef, 'externalRef')}/transfers`,
        );
        if (opts.json) return printJson(ledger);
        for (const t of ledger.transfers) printLine(entryLine(t));
        printLine(`succeeded in total: ${ledger.succeededMicroUsd} micro-USD`);
      }),
    );

  program
    .command('wallet')
    .description("read the tenant's wallet on the platform and compare it with our ledger")
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        // The gateway reads the wallet with the parent key it holds.
        const view = await gateway.get<WalletComparison>(`/v1/tenants/${segment(externalRef, 'externalRef')}/wallet`);
        if (opts.json) return printJson(view);
        printLine(
          `wallet of ${externalRef} (${view.subaccountId}): ${view.balanceMicroUsd ?? 'balance not shown'} micro-USD`,
        );
        printLine(`our ledger (succeeded transfers): ${view.recordedInMicroUsd} micro-USD`);
        if (view.differenceMicroUsd !== null)
          printLine(
            `difference (wallet − ledger): ${view.differenceMicroUsd} ` +
              `micro-USD${BigInt(view.differenceMicroUsd) < 0n ? ' (spent by the tenant)' : ''}`,
          );
        for (const t of view.unrecordedTransfers)
          printLine(
            `not ours: transfer ${t.id ?? '?'} of ${t.amountMicroUsd ?? '?'} under key ${t.idempotencyKey ?? '(none)'}`,
          );
        if (view.missingFromWallet?.length)
          printLine(`not in the wallet's recent transfers: ${view.missingFromWallet.join(', ')}`);
        printLine(
          view.drift ? `drift: ${view.drift} (money in that we did not record; reconcile with billing)` : 'drift: none',
        );
      }),
    );
}
