import type { Command } from 'commander';
import type { TenantStatusView } from '../../client/tenant-status.js';
import { printJson, withRuntime } from '../run.js';
import { registerKeySlotCommands } from './key-slots.js';

async function printStatus(view: TenantStatusView): Promise<void> {
  const [{ formatRotationSection }, { formatLastRun }] = await Promise.all([
    import('../../client/rotation-status.js'),
    import('../../client/last-runs.js'),
  ]);
  const r = view.record;
  console.log(
    `tenant ${view.externalRef}: ` +
      `${r ? `${r.status} — "${r.name}", sub-account ${r.subaccountId ?? '(none yet)'}` : 'no record yet'}`,
  );
  if (view.onboarding) {
    const p = view.onboarding.progress;
    console.log(
      `onboarding ${view.onboarding.workflowId}: ${view.onboarding.runStatus}${p ? `, stage ${p.stage}` : ''}`,
    );
    if (p?.waitingFor) console.log(`  waiting: ${p.waitingFor}`);
    if (p?.error) console.log(`  error: ${p.error}`);
  }
  for (const k of view.keys)
    console.log(
      `key ${k.slot} g${k.generation}: ${k.status} ${k.keyId ?? ''} ` +
        `${k.fingerprint ?? ''}${k.verified ? ' (verified)' : ''}`,
    );
  for (const t of view.transfers) {
    console.log(
      `transfer ${t.purpose}: ${t.state} ${t.amountMicroUsd} micro-USD${t.failureCode ? ` (${t.failureCode})` : ''}${t.resolution ? ` [${t.resolution}]` : ''}`,
    );
  }
  for (const line of formatRotationSection(view.rotation)) console.log(line);
  for (const run of view.lastRuns) for (const line of formatLastRun(run)) console.log(line);
}

export function registerTenantCommands(program: Command): void {
  program
    .command('status')
    .description("a tenant's records and its onboarding progress (never a secret)")
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { getTenantStatus } = await import('../../client/tenant-status.js');
        // The client connects while the first records are read.
        const view = await getTenantStatus({ pool: runtime.pool(), client: runtime.client() }, externalRef);
        if (opts.json) printJson(view);
        else await printStatus(view);
      }),
    );

  program
    .command('list')
    .description('tenants in our records')
    .option('--json', 'print JSON')
    .option('--limit <n>', 'at most this many', '100')
    .option('--after <externalRef>', 'page: start after this external ref')
    .action(async (opts: { json?: boolean; limit: string; after?: string }) =>
      withRuntime(async (runtime) => {
        const { listTenants } = await import('../../db/tenants-store.js');
        const rows = await listTenants(runtime.pool(), {
          limit: Number(opts.limit),
          ...(opts.after ? { after: opts.after } : {}),
        });
        const view = rows.map((t) => ({
          externalRef: t.externalRef,
          name: t.name,
          status: t.status,
          subaccountId: t.subaccountId,
          createdAt: t.createdAt.toISOString(),
        }));
        if (opts.json) printJson(view);
        else
          for (const t of view)
            console.log(`${t.externalRef.padEnd(32)} ${t.status.padEnd(10)} ${t.subaccountId ?? '-'}  ${t.name}`);
      }),
    );

  const key = program.command('key').description('tenant keys');
  key
    .command('reveal')
    .description("print a tenant's active key token (the one way to read it back; audited)")
    .argument('<externalRef>')
    .option('--slot <slot>', 'key slot', 'default')
    .option('--operator <name>', 'who acts (audited); only without an OPERATORS list, where the token says who')
    .requiredOption('--reason <text>', 'why (audited; not empty)')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { slot: string; operator?: string; reason: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ masterKeysOf }, { createVault }, { revealKey }] = await Promise.all([
          import('../../main/wiring/data-converter.js'),
          import('../../secrets/vault.js'),
          import('../../client/reveal-key.js'),
        ]);
        const keys = masterKeysOf(runtime.config);
        if (!keys) throw new Error('SECRETS_KEYS: is required to reveal a key');
        const operator = runtime.operator(opts.operator);
        let approvalId: string | undefined;
        if (runtime.safeOps.approvals.has('keyReveal')) {
          // Four-eyes: an approved request of this operator is used up; otherwise one is asked for.
          const [{ findApprovedReveal }, { requestApproval }] = await Promise.all([
            import('../../db/approvals-store.js'),
            import('../../client/approvals.js'),
          ]);
          const approved = await findApprovedReveal(runtime.pool(), {
            externalRef,
            slot: opts.slot,
            requestedBy: operator,
          });
          if (!approved) {
            const request = await requestApproval(runtime.pool(), {
              action: 'keyReveal',
              externalRef,
              params: { slot: opts.slot },
              by: { operator, reason: opts.reason },
              ttlMs: runtime.safeOps.approvalTtlMs,
            });
            if (opts.json)
              printJson({ status: 'awaiting_approval', approvalId: request.id, expiresAt: request.expiresAt });
            else
              console.log(
                `awaiting_approval: ${request.id} (expires ${request.expiresAt.toISOString()}); ` +
                  `another operator runs \`tenantctl approvals approve ${request.id} --reason ` +
                  `"..."\`, then run this again`,
              );
            return;
          }
          approvalId = approved.id;
        }
        const revealed = await revealKey(
          { pool: runtime.pool(), vault: createVault(keys) },
          { externalRef, slot: opts.slot, reason: opts.reason, operator, ...(approvalId ? { approvalId } : {}) },
        );
        if (opts.json) printJson(revealed);
        else process.stdout.write(`${revealed.token}\n`);
      }),
    );
  registerKeySlotCommands(key);
}
