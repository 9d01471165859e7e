import type { Command } from 'commander';
import { printJson, withRuntime } from '../run.js';

/** `tenantctl statement` and `tenantctl operators`: the guards around dangerous operations (issue 22). */
export function registerSafeOpsCommands(program: Command): void {
  program
    .command('statement')
    .description(
      "a closed tenant's final statement as JSON: transfers, balance left, keys with fingerprints and dates, projects deleted, the audit trail (no secret)",
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

  const operators = program.command('operators').description('operator identities (OPERATORS)');
  operators
    .command('add')
    .description(
      'make a token for a new operator: prints the token once (hand it to them) and the OPERATORS entry (only its hash)',
    )
    .argument('<name>', '1-100 of A-Z a-z 0-9 . _ @ -')
    .action(async (name: string) => {
      const { generateOperator } = await import('../../secrets/operators.js');
      const { token, entry } = generateOperator(name);
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
