import type { Command } from 'commander';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

/** `tenantctl statement` and `tenantctl operators`: the guards around dangerous operations (issue 22). */
export function registerSafeOpsCommands(program: Command): void {
  program
    .command('statement')
    .description(
      "a closed tenant's final statement as JSON: transfers, balance left, keys with " +
        'fingerprints and dates, projects deleted, the audit trail (no secret)',
    )
    .argument('<externalRef>')
    .option('--out <file>', 'write it to this file (mode 0600) instead of printing it')
    .action(async (externalRef: string, opts: { out?: string }) =>
      withGateway(async (gateway) => {
        const statement = await gateway.get<unknown>(`/v1/tenants/${segment(externalRef, 'externalRef')}/statement`);
        if (!opts.out) return printJson(statement);
        const { writeFileSync } = await import('node:fs');
        writeFileSync(opts.out, `${JSON.stringify(statement, null, 2)}\n`, { mode: 0o600 });
        printLine(`statement of ${externalRef} written to ${opts.out}`);
      }),
    );

  const operators = program.command('operators').description('caller identities and their roles (OPERATORS)');
  operators
    .command('add')
    .description(
      'make a token for a new identity (local: needs no server): prints the token once (hand it ' +
        'to them) and the OPERATORS entry (only its hash and role)',
    )
    .argument('<name>', '1-100 of A-Z a-z 0-9 . _ @ -')
    .option('--role <role>', 'viewer, backend, operator or admin (see docs/security.md)', 'operator')
    .action(async (name: string, opts: { role: string }) => {
      const { generateOperator } = await import('../../secrets/operators.js');
      const { token, entry } = generateOperator(name, opts.role as never);
      printLine(`token (give it to ${name}; it is not stored anywhere): ${token}`);
      printLine(`append to OPERATORS: ${entry}`);
    });
  operators
    .command('whoami')
    .description('who the gateway says your token is, and its role (TENANTCTL_OPERATOR_TOKEN or --operator-token)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const me = await gateway.get<{ name: string; role: string }>('/v1/whoami');
        if (opts.json) printJson(me);
        else printLine(`${me.name} (${me.role})`);
      }),
    );
}

/** `tenantctl approvals list|approve|reject`: the four-eyes queue. */
export function registerApprovalCommands(program: Command): void {
  const approvals = program
    .command('approvals')
    .description('four-eyes approvals: requests awaiting a second operator (APPROVAL_POLICY)');
  approvals
    .command('list')
    .description('pending and approved-but-unused requests (--all: every one, with expired ones marked)')
    .option('--all', 'every request')
    .option('--json', 'print JSON')
    .action(async (opts: { all?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const views = await gateway.get<ApprovalListItem[]>('/v1/approvals', opts.all ? { all: 'true' } : {});
        if (opts.json) return printJson(views);
        if (views.length === 0) printLine('no approval requests');
        for (const v of views)
          printLine(
            `${v.id} ${v.status} ${v.action} ${v.externalRef} ${JSON.stringify(v.params)} ` +
              `asked by ${v.requestedBy} ("${v.reason}"), expires ` +
              `${v.expiresAt}${v.decidedBy ? `, decided by ${v.decidedBy}` : ''}`,
          );
      }),
    );
  for (const decision of ['approve', 'reject'] as const) {
    approvals
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve a request someone else asked for: a resolveTransfer is sent to its run ' +
              'now; a key reveal may then be run once by its requester'
          : 'reject a request someone else asked for: nothing is done',
      )
      .argument('<id>')
      .requiredOption('--reason <text>', 'why (audited)')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { reason: string; json?: boolean }) =>
        withGateway(async (gateway) => {
          // Who decides is the token's name; the server refuses the requester and a second decision.
          const decided = await gateway.post<{
            id: string;
            state: string;
            decidedBy: string;
            workflowId?: string;
            answer?: { stage: string; transferState?: string };
          }>(`/v1/approvals/${segment(id)}/${decision}`, { reason: opts.reason });
          if (opts.json)
            return printJson({ id, state: decided.state, ...(decided.answer ? { answer: decided.answer } : {}) });
          const answer = decided.answer;
          printLine(
            `${id} ${decided.state} by ${decided.decidedBy}` +
              (answer
                ? `: ${decided.workflowId ?? ''} is now ${answer.stage}` +
                  (answer.transferState ? `, transfer ${answer.transferState}` : '')
                : ''),
          );
        }),
      );
  }
}

/** An approval request as `GET /v1/approvals` lists it. */
interface ApprovalListItem {
  id: string;
  status: string;
  action: string;
  externalRef: string;
  params: Record<string, unknown>;
  requestedBy: string;
  reason: string;
  expiresAt: string;
  decidedBy: string | null;
}
