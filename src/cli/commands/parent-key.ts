import type { Command } from 'commander';
import type { ParentKeysView } from '../../client/parent-key.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import { printJson, withGateway, withRuntime } from '../run.js';

/** What a finished parent key rotation returns (ids and fingerprints only). */
interface RotationResult {
  newKey: { rowId: string; fingerprint: string };
  oldKey: { platformKeyId: string };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

/**
 * The parent's own platform key (svpk_): kept sealed in our records, rotated by rotateParentKey. show, rotate,
 * schedule and decide are clients of the gateway's /v1/parent-key (rotate, schedule and decide need parent.key, an
 * admin's); import stays local (it seals the token with SECRETS_KEYS into the database).
 */
export function registerParentKeyCommands(program: Command): void {
  const parentKey = program
    .command('parent-key')
    .description("the parent's platform key (svpk_): sealed in our records, never printed");

  parentKey
    .command('import')
    .description(
      'seal a platform key into our records and make it current (the token is read from stdin); ' +
        'local: needs DATABASE_URL and SECRETS_KEYS, not the gateway',
    )
    .option('--operator <name>', 'who imports it (audited); with an OPERATORS list the token says who')
    .requiredOption('--reason <text>', 'why (audited)')
    .option('--from-env', 'read PLATFORM_API_KEY instead of stdin')
    .option('--json', 'print JSON')
    .action(async (opts: { operator?: string; reason: string; fromEnv?: boolean; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ checkDecisionBy }, { InvalidInputError }, { masterKeysOf }, { createVault }, source] =
          await Promise.all([
            import('../../domain/operator-decisions.js'),
            import('../../domain/tenant-input.js'),
            import('../../main/wiring/data-converter.js'),
            import('../../secrets/vault.js'),
            import('../../secrets/parent-key-source.js'),
          ]);
        const by = checkDecisionBy({ operator: runtime.operator(opts.operator), reason: opts.reason });
        if (!by.ok) throw new InvalidInputError(by.problems);
        const token = opts.fromEnv ? (runtime.config.PLATFORM_API_KEY ?? '') : await readStdin();
        if (!source.PARENT_KEY_PATTERN.test(token))
          throw new InvalidInputError([
            `token: must be a platform key (svpk_ followed by at least 8 characters, no white ` +
              `space)${opts.fromEnv ? ' in PLATFORM_API_KEY' : ' on stdin'}`,
          ]);
        const keys = masterKeysOf(runtime.config);
        if (!keys) throw new InvalidInputError(['SECRETS_KEYS: is required (the key is sealed with it)']);
        const result = await source.importParentKeyToken(
          { pool: runtime.pool(), vault: createVault(keys) },
          { token, onlyIfNone: false, actor: `operator:${by.value.operator}`, reason: by.value.reason },
        );
        if (opts.json) printJson(result);
        else
          console.log(
            result.imported
              ? `imported ${result.fingerprint}: it is the current parent key (processes switch ` +
                  `within PARENT_KEY_REFRESH_MS)`
              : `${result.fingerprint} is already in our records: nothing changed`,
          );
      }),
    );

  parentKey
    .command('show')
    .description('the parent keys in our records and which one each live process uses (ids and fingerprints only)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<ParentKeysView>('/v1/parent-key');
        if (opts.json) return printJson(view);
        if (!view.current) console.log('no current parent key: run `tenantctl parent-key import`');
        for (const k of view.keys)
          console.log(
            `key ${k.id}: ${k.status.padEnd(8)} ${k.fingerprint ?? '-'} platform id ` +
              `${k.platformKeyId ?? '(unknown)'} (${k.source})`,
          );
        for (const p of view.processes)
          console.log(
            `process ${p.processId} (${p.kind}): uses key ${p.parentKeyId ?? '-'}, seen ${p.seenAgoMs} ms ago`,
          );
      }),
    );

  parentKey
    .command('rotate')
    .description(
      'rotate the parent key: create, seal, make current, wait until every live process ' +
        'uses it, quiet gate, revoke the old one',
    )
    .option('--emergency', 'after a leak: no quiet gate (the old key is revoked once every live process has switched)')
    .option('--reason <text>', 'why (audited)')
    .option('--poll-interval <duration>', 'how often heartbeats and the key list are read')
    .option('--stale-after <duration>', 'a process silent this long is not waited for')
    .option('--switch-deadline <duration>', 'processes not switched after this long: held for an operator')
    .option('--quiet-period <duration>', 'the old key shows no use this long before it is revoked')
    .option('--quiet-deadline <duration>', 'not quiet after this long: held for an operator')
    .option('--overlap-window <duration>', 'no last use shown: wait this long after the switch')
    .option('--wait', 'wait for the rotation to finish')
    .option('--json', 'print JSON')
    .action(async (opts: Record<string, string | boolean | undefined>) =>
      withGateway(async (gateway) => {
        const timing = {
          pollInterval: opts.pollInterval,
          staleAfter: opts.staleAfter,
          switchDeadline: opts.switchDeadline,
          quietPeriod: opts.quietPeriod,
          quietDeadline: opts.quietDeadline,
          overlapWindow: opts.overlapWindow,
        };
        const options = Object.fromEntries(Object.entries(timing).filter(([, v]) => v !== undefined));
        const started = await gateway.post<{ workflowId: string; started: boolean }>('/v1/parent-key/rotate', {
          emergency: Boolean(opts.emergency),
          ...(opts.reason ? { reason: opts.reason } : {}),
          ...(Object.keys(options).length ? { options } : {}),
        });
        let result: RotationResult | undefined;
        if (opts.wait) {
          const { resultOfRun } = await import('../poll-run.js');
          result = await resultOfRun<RotationResult>(gateway, '/v1/parent-key/rotation');
        }
        if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
        else if (result)
          console.log(
            `parent key rotated: key ${result.newKey.rowId} (${result.newKey.fingerprint}) is ` +
              `current, old key ${result.oldKey.platformKeyId} revoked`,
          );
        else console.log(`${started.started ? 'started' : 'already running'}: ${started.workflowId}`);
      }),
    );

  parentKey
    .command('schedule')
    .description('rotate the parent key on a Temporal Schedule (created or updated)')
    .requiredOption('--every <duration>', 'e.g. 30d')
    .action(async (opts: { every: string }) =>
      withGateway(async (gateway) => {
        const { scheduleId, outcome } = await gateway.post<{ scheduleId: string; outcome: string }>(
          '/v1/parent-key/schedule',
          { every: opts.every },
        );
        console.log(`${outcome} schedule ${scheduleId}: every ${opts.every}`);
      }),
    );

  parentKey
    .command('decide')
    .description('an operator decision for the running parent key rotation (an Update: refused when it does not apply)')
    .argument('<decision>', 'revoke-anyway | abort | retry-key-create | emergency')
    .requiredOption('--reason <text>', 'why (audited)')
    .action(async (decision: string, opts: { reason: string }) =>
      withGateway(async (gateway) => {
        // The gateway checks the decision's name and the reason; the run's validator decides whether it applies.
        const answer = await gateway.post<DecisionAnswer>('/v1/parent-key/decision', {
          decision,
          reason: opts.reason,
        });
        console.log(`${answer.stage}: ${answer.effect}`);
      }),
    );
}
