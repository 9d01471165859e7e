import type { Command } from 'commander';
import type { SlotKeyView } from '../../client/keys/key-slots.js';
import type { IssueTenantKeyResult } from '../../../workflows/keys/issue-tenant-key.js';
import type { RevokeTenantKeySlotResult } from '../../../workflows/keys/revoke-tenant-key.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import { resultOfRun } from '../poll-run.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

interface Started {
  workflowId: string;
  started: boolean;
}

const slotPath = (externalRef: string, slot: string, action: 'issue' | 'revoke') =>
  `/v1/tenants/${segment(externalRef, 'externalRef')}/keys/${segment(slot, 'slot')}/${action}`;

/** The decisions for a slot's key issue waiting at the active-key limit, as the gateway's path names them. */
const ISSUE_DECISIONS = ['retry-key-create', 'abort'] as const;

/**
 * `tenantctl key issue|list|revoke|decide`: a key per workload and environment (slots), beside `key reveal`;
 * clients of the gateway's /v1 key routes (who asks, and who decides, is the token's name).
 */
export function registerKeySlotCommands(key: Command): void {
  key
    .command('issue')
    .description("issue a tenant's key in a slot (create, seal, verify, record); a slot with a key keeps it")
    .argument('<externalRef>')
    .requiredOption('--slot <slot>', 'key slot, e.g. ci or prod-web (1-32 of a-z 0-9 -)')
    .option('--key-limit-retry <duration>', 'at the active-key limit: retry the create this often')
    .option('--wait', 'wait for the key to be issued')
    .option('--json', 'print JSON')
    .action(
      async (externalRef: string, opts: { slot: string; keyLimitRetry?: string; wait?: boolean; json?: boolean }) =>
        withGateway(async (gateway) => {
          const path = slotPath(externalRef, opts.slot, 'issue');
          const handle = await gateway.post<Started>(
            path,
            opts.keyLimitRetry ? { options: { keyLimitRetryInterval: opts.keyLimitRetry } } : {},
          );
          const started = { workflowId: handle.workflowId, started: handle.started };
          const result = opts.wait ? await resultOfRun<IssueTenantKeyResult>(gateway, path) : undefined;
          if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
          else if (result)
            printLine(
              `key ${result.slot} g${result.generation} ${result.outcome}: ${result.keyId} (${result.fingerprint})`,
            );
          else printLine(`${handle.started ? 'started' : 'already running'}: ${handle.workflowId}`);
        }),
    );

  key
    .command('list')
    .description("a tenant's keys by slot and generation (ids and fingerprints, never a secret)")
    .argument('<externalRef>')
    .option('--slot <slot>', 'only this slot')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { slot?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const { keys } = await gateway.get<{ keys: SlotKeyView[] }>(
          `/v1/tenants/${segment(externalRef, 'externalRef')}/keys`,
          {
            slot: opts.slot,
          },
        );
        if (opts.json) return printJson(keys);
        const { formatWait } = await import('../../client/wait-lines.js');
        for (const k of keys) {
          printLine(
            `${k.slot.padEnd(16)} g${k.generation} ${k.status.padEnd(8)} ${k.keyId ?? '-'} ` +
              `${k.fingerprint ?? ''}${k.verified ? ' (verified)' : ''}`,
          );
          // A running issue or revoke of the slot that waits: what for, since when, the decisions that apply.
          if (k.waiting) printLine(`  ${k.waiting.action} ${formatWait(k.waiting)}`);
        }
      }),
    );

  key
    .command('revoke')
    .description("revoke a slot's key once the platform shows it unused (the quiet gate), or at once with --force")
    .argument('<externalRef>')
    .requiredOption('--slot <slot>', 'key slot')
    .option('--force', 'skip the quiet gate (needs --reason and the keys.force permission; audited)')
    .option('--reason <text>', 'why (audited)')
    .option('--quiet-period <duration>', 'no new use for this long before the revoke')
    .option('--poll-interval <duration>', 'how often the key record is read')
    .option('--quiet-deadline <duration>', 'still in use after this long: refused')
    .option('--overlap-window <duration>', 'no last-use shown: wait this long, then revoke')
    .option('--no-wait', 'do not wait for the outcome')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: {
          slot: string;
          force?: boolean;
          reason?: string;
          quietPeriod?: string;
          pollInterval?: string;
          quietDeadline?: string;
          overlapWindow?: string;
          wait: boolean;
          json?: boolean;
        },
      ) =>
        withGateway(async (gateway) => {
          const options = {
            ...(opts.quietPeriod ? { quietPeriod: opts.quietPeriod } : {}),
            ...(opts.pollInterval ? { pollInterval: opts.pollInterval } : {}),
            ...(opts.quietDeadline ? { quietDeadline: opts.quietDeadline } : {}),
            ...(opts.overlapWindow ? { overlapWindow: opts.overlapWindow } : {}),
          };
          const path = slotPath(externalRef, opts.slot, 'revoke');
          const handle = await gateway.post<Started>(path, {
            force: Boolean(opts.force),
            ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
            ...(Object.keys(options).length ? { options } : {}),
          });
          const started = { workflowId: handle.workflowId, started: handle.started };
          const result = opts.wait ? await resultOfRun<RevokeTenantKeySlotResult>(gateway, path) : undefined;
          if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
          else if (result) printLine(`key ${result.slot} ${result.keyId}: ${result.outcome} — ${result.verdict}`);
          else printLine(`${handle.started ? 'started' : 'already running'}: ${handle.workflowId}`);
          if (result?.outcome === 'refused') process.exitCode = 3;
        }),
    );

  key
    .command('decide')
    .description(
      "decide for a slot's key issue waiting at the platform's active-key limit: retry-key-create (after revoking " +
        'an unused key) or abort (give the issue up; nothing was created). An Update: refused, naming why, when it ' +
        "does not apply now (who decides: the token's name)",
    )
    .argument('<externalRef>')
    .argument('<decision>', ISSUE_DECISIONS.join(' | '))
    .requiredOption('--slot <slot>', 'key slot')
    .requiredOption('--reason <text>', 'why (audited)')
    .option('--json', 'print the answer as JSON')
    .action(async (externalRef: string, decision: string, opts: { slot: string; reason: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        if (!(ISSUE_DECISIONS as readonly string[]).includes(decision))
          throw Object.assign(new Error(`decision: must be one of ${ISSUE_DECISIONS.join(', ')}`), {
            problems: [`decision: must be one of ${ISSUE_DECISIONS.join(', ')}`],
          });
        const answer = await gateway.post<DecisionAnswer & { workflowId: string; decision: string }>(
          `${slotPath(externalRef, opts.slot, 'issue')}/${segment(decision, 'decision')}`,
          { reason: opts.reason },
        );
        if (opts.json) return printJson(answer);
        printLine(`${answer.decision} accepted by ${answer.workflowId} (now ${answer.stage}): ${answer.effect}`);
      }),
    );
}
