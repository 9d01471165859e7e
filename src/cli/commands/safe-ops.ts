import type { Command } from 'commander';
import { printJson, withRuntime } from '../run.js';

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
      withRuntime(async (runtime) => {
        const { getCloseStatement } = await import('../../client/close-statement.js');
        const statement = await getCloseStatement(runtime.pool(), externalRef);
        if (!opts.out) return printJson(statement);
        const { writeFileSync } = await import('node:fs');
        writeFileSync(opts.out, `${JSON.stringify(statement, null, 2)}\n`, { mode: 0o600 });
        console.log(`statement of ${externalRef} written to ${opts.out}`);
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
    .option('--role <role>', "viewer, backend, operator or admin (see the README's roles table)", 'operator')
    .action(async (name: string, opts: { role: string }) => {
      const { generateOperator } = await import('../../secrets/operators.js');
      const { token, entry } = generateOperator(name, opts.role as never);
      console.log(`token (give it to ${name}; it is not stored anywhere): ${token}`);
      console.log(`append to OPERATORS: ${entry}`);
    });
  operators
    .command('whoami')
    .description('the operator your token authenticates (TENANTCTL_OPERATOR_TOKEN or --operator-token)')
    .action(async () =>
      withRuntime(async (runtime) => {
        console.log(runtime.operator(undefined));
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
      withRuntime(async (runtime) => {
        const { listApprovalViews } = await import('../../client/approvals.js');
        const views = await listApprovalViews(runtime.pool(), { all: opts.all ?? false });
        if (opts.json) return printJson(views);
        if (views.length === 0) console.log('no approval requests');
        for (const v of views)
          console.log(
            `${v.id} ${v.status} ${v.action} ${v.externalRef} ${JSON.stringify(v.params)} ` +
              `asked by ${v.requestedBy} ("${v.reason}"), expires ${v.expiresAt.toISOString()}${v.decidedBy ? `, decided by ${v.decidedBy}` : ''}`,
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
      .option('--operator <name>', 'who decides (audited); only without an OPERATORS list, where the token says who')
      .option('--json', 'print JSON')
      .action(async (id: string, opts: { reason: string; operator?: string; json?: boolean }) =>
        withRuntime(async (runtime) => {
          const { decideApproval } = await import('../../client/approvals.js');
          const operator = runtime.operator(opts.operator);
          const { approval, answer } = await decideApproval(
            { pool: runtime.pool(), client: await runtime.client() },
            id,
            decision,
            { operator, reason: opts.reason },
          );
          if (opts.json) return printJson({ id, state: approval.state, ...(answer ? { answer } : {}) });
          console.log(
            `${id} ${approval.state} by ${operator}${answer ? `: ${approval.params.workflowId as string} is now ${answer.stage}${answer.transferState ? `, transfer ${answer.transferState}` : ''}` : ''}`,
          );
        }),
      );
  }
}
