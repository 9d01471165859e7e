import type { Command } from 'commander';
import { printJson, withRuntime } from '../run.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

/** The parent's own platform key (svpk_): kept sealed in our records, rotated by rotateParentKey. */
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
      withRuntime(
        async (runtime) => {
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
        },
        { local: true },
      ),
    );

  parentKey
    .command('show')
    .description('the parent keys in our records and which one each live process uses (ids and fingerprints only)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { showParentKeys } = await import('../../client/parent-key.js');
        const view = await showParentKeys(runtime.pool());
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
    .option('--operator <name>', 'who asks (audited)')
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
      withRuntime(async (runtime) => {
        const { startParentKeyRotation } = await import('../../client/parent-key.js');
        const timing = {
          pollInterval: opts.pollInterval,
          staleAfter: opts.staleAfter,
          switchDeadline: opts.switchDeadline,
          quietPeriod: opts.quietPeriod,
          quietDeadline: opts.quietDeadline,
          overlapWindow: opts.overlapWindow,
        };
        const options = Object.fromEntries(Object.entries(timing).filter(([, v]) => v !== undefined));
        const handle = await startParentKeyRotation(
          await runtime.client(),
          {
            emergency: Boolean(opts.emergency),
            ...(opts.operator ? { operator: opts.operator } : {}),
            ...(opts.reason ? { reason: opts.reason } : {}),
            ...(Object.keys(options).length ? { options } : {}),
          },
          { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE },
        );
        const started = { workflowId: handle.workflowId, started: handle.started };
        const result = opts.wait ? await handle.result() : undefined;
        if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
        else if (result)
          console.log(
            `parent key rotated: key ${result.newKey.rowId} (${result.newKey.fingerprint}) is ` +
              `current, old key ${result.oldKey.platformKeyId} revoked`,
          );
        else console.log(`${handle.started ? 'started' : 'already running'}: ${handle.workflowId}`);
      }),
    );

  parentKey
    .command('schedule')
    .description('rotate the parent key on a Temporal Schedule (created or updated)')
    .requiredOption('--every <duration>', 'e.g. 30d')
    .action(async (opts: { every: string }) =>
      withRuntime(async (runtime) => {
        const { scheduleParentKeyRotation } = await import('../../client/parent-key.js');
        const { scheduleId, outcome } = await scheduleParentKeyRotation(
          await runtime.client(),
          {},
          opts.every,
          runtime.config.TEMPORAL_TASK_QUEUE,
        );
        console.log(`${outcome} schedule ${scheduleId}: every ${opts.every}`);
      }),
    );

  parentKey
    .command('decide')
    .description('an operator decision for the running parent key rotation (an Update: refused when it does not apply)')
    .argument('<decision>', 'revoke-anyway | abort | retry-key-create | emergency')
    .requiredOption('--operator <name>', 'who decides (audited)')
    .requiredOption('--reason <text>', 'why (audited)')
    .action(async (decision: string, opts: { operator: string; reason: string }) =>
      withRuntime(async (runtime) => {
        const [{ PARENT_KEY_DECISIONS }, { sendDecision }, { PARENT_KEY_ROTATION_WORKFLOW_ID }, { InvalidInputError }] =
          await Promise.all([
            import('../../client/parent-key.js'),
            import('../../client/send-decision.js'),
            import('../../domain/ids.js'),
            import('../../domain/tenant-input.js'),
          ]);
        const update = PARENT_KEY_DECISIONS[decision as keyof typeof PARENT_KEY_DECISIONS];
        if (!update)
          throw new InvalidInputError([`decision: must be one of ${Object.keys(PARENT_KEY_DECISIONS).join(', ')}`]);
        const answer = await sendDecision(await runtime.client(), PARENT_KEY_ROTATION_WORKFLOW_ID, update, opts);
        console.log(`${answer.stage}: ${answer.effect}`);
      }),
    );
}
