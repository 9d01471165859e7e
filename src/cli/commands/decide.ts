import type { Command } from 'commander';
import { segment, withGateway } from '../run.js';
import type { AwaitingApproval, DecisionReply } from '../decisions.js';

/**
 * `tenantctl decide <run> <decision>`: the one decision verb, a client of `POST /v1/runs/:run/decisions/:decision`.
 * The run is named by its workflow id, as `tenantctl status` and every wait show it (onboard:acme, fund:acme:k1,
 * close:acme, rotate:acme:default, key:acme:ci, plan-rollout:gold@2, rotate-parent-key); the gateway names the
 * decisions each kind takes when one is wrong. Who decides is the token's name.
 */
export function registerDecideCommand(program: Command): void {
  program
    .command('decide')
    .description(
      'decide for a waiting run, named by its workflow id: resolve-transfer, parent-funded, cancel-close, ' +
        'revoke-anyway, abort, retry-key-create, cancel, pause, resume, emergency (the run kind says which apply)',
    )
    .argument('<run>', 'the workflow id of the run that waits, e.g. onboard:acme or rotate:acme:default')
    .argument('<decision>', 'one of the decisions its kind takes')
    .option('--reason <text>', 'why (audited; every decision but a rotation cancel needs one)')
    .option('--outcome <outcome>', 'resolve-transfer: exactly applied | not-applied')
    .option('--purpose <purpose>', "resolve-transfer of a close: the transfer to resolve (default: the onboarding's)")
    .option('--json', 'print the answer as JSON')
    .action(
      async (
        run: string,
        decision: string,
        opts: { reason?: string; outcome?: string; purpose?: string; json?: boolean },
      ) =>
        withGateway(async (gateway) => {
          // The raw values go to the server, which checks them by the run's own rules (exact words only).
          const answer = await gateway.post<DecisionReply | AwaitingApproval>(
            `/v1/runs/${segment(run, 'run')}/decisions/${segment(decision, 'decision')}`,
            {
              ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
              ...(opts.outcome !== undefined ? { outcome: opts.outcome } : {}),
              ...(opts.purpose !== undefined ? { purpose: opts.purpose } : {}),
            },
          );
          const { printAwaitingApproval, printDecisionReply } = await import('../decisions.js');
          if ('status' in answer && answer.status === 'awaiting_approval') printAwaitingApproval(answer, opts.json);
          else printDecisionReply(answer as DecisionReply, opts.json);
        }),
    );
}
