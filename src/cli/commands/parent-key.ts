import type { Command } from 'commander';
import type { ParentKeysView, ParentPlatformKeysView } from '../../client/parent-key/parent-key.js';
import type { Pool } from '../../db/pool.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import { withGateway, withRuntime } from '../run.js';
import { printJson, printLine } from '../output.js';

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
    .option(
      '--key-id <id>',
      "the key's platform id (as the platform's key list shows it): a rotation then tells it apart from the " +
        "parent's other keys (another service's) without asking; checked against the list read with this key",
    )
    .option('--json', 'print JSON')
    .action(async (opts: { operator?: string; reason: string; fromEnv?: boolean; keyId?: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ checkDecisionBy }, { InvalidInputError }, { masterKeysOf }, { createVault }, source, client, store] =
          await Promise.all([
            import('../../domain/operator-decisions.js'),
            import('../../domain/tenant-input.js'),
            import('../../main/wiring/data-converter.js'),
            import('../../secrets/vault.js'),
            import('../../secrets/parent-key-source.js'),
            import('../../client/parent-key/parent-key.js'),
            import('../../db/parent-keys-store.js'),
          ]);
        const by = checkDecisionBy({ operator: runtime.operator(opts.operator), reason: opts.reason });
        if (!by.ok) throw new InvalidInputError(by.problems);
        const keyId = opts.keyId === undefined ? undefined : client.checkPlatformKeyId(opts.keyId, 'key-id');
        const token = opts.fromEnv ? (runtime.config.PLATFORM_API_KEY ?? '') : await readStdin();
        if (!source.PARENT_KEY_PATTERN.test(token))
          throw new InvalidInputError([
            `token: must be a platform key (svpk_ followed by at least 8 characters, no white ` +
              `space)${opts.fromEnv ? ' in PLATFORM_API_KEY' : ' on stdin'}`,
          ]);
        const keys = masterKeysOf(runtime.config);
        if (!keys) throw new InvalidInputError(['SECRETS_KEYS: is required (the key is sealed with it)']);
        const pool = runtime.pool();
        if (keyId) await checkKeyId(runtime.config, pool, token, keyId);
        const result = await source.importParentKeyToken(
          { pool, vault: createVault(keys) },
          { token, onlyIfNone: false, actor: `operator:${by.value.operator}`, reason: by.value.reason },
        );
        let named: string | undefined;
        if (keyId) {
          const { fingerprintToken } = await import('../../secrets/fingerprint.js');
          const row = await store.findParentKeyByFingerprint(pool, fingerprintToken(token));
          const outcome = await store.recordParentPlatformKeyId(
            pool,
            { rowId: row!.id, platformKeyId: keyId },
            {
              actor: `operator:${by.value.operator}`,
              action: 'parent_key.identified',
              subject: keyId,
              details: { rowId: row!.id, reason: by.value.reason, evidence: 'named at import (--key-id)' },
            },
          );
          if (outcome === 'other_id' || outcome === 'conflict')
            throw new Error(
              `key-id: ${keyId} cannot be recorded for record ${row!.id}: ` +
                (outcome === 'conflict'
                  ? 'another of our records holds it'
                  : `the record is already platform key ${row!.platformKeyId}`),
            );
          named = keyId;
        }
        if (opts.json) printJson({ ...result, ...(named ? { platformKeyId: named } : {}) });
        else
          printLine(
            (result.imported
              ? `imported ${result.fingerprint}: it is the current parent key (processes switch ` +
                `within PARENT_KEY_REFRESH_MS)`
              : `${result.fingerprint} is already in our records: nothing changed`) +
              (named ? `; platform id ${named} recorded` : ''),
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
        if (!view.current) printLine('no current parent key: run `tenantctl parent-key import`');
        for (const k of view.keys)
          printLine(
            `key ${k.id}: ${k.status.padEnd(8)} ${k.fingerprint ?? '-'} platform id ` +
              `${k.platformKeyId ?? '(unknown)'} (${k.source})`,
          );
        for (const p of view.processes)
          printLine(`process ${p.processId} (${p.kind}): uses key ${p.parentKeyId ?? '-'}, seen ${p.seenAgoMs} ms ago`);
        const rotation = view.rotation;
        if (!rotation) return;
        printLine(
          `rotation ${rotation.workflowId} (run ${rotation.runId}): ${rotation.stage}` +
            `${rotation.emergency ? ' (emergency)' : ''}, old key ${rotation.oldKey?.rowId ?? '-'} ` +
            `(platform id ${rotation.oldKey?.platformKeyId ?? 'unknown'}), new key ${rotation.newKey?.rowId ?? '-'}`,
        );
        if (rotation.waiting) {
          const { formatWait } = await import('../../client/wait-lines.js');
          printLine(`  ${formatWait(rotation.waiting)}`);
        }
        for (const p of rotation.notSwitched)
          printLine(`  not yet switched: ${p.processId} (${p.kind}), last report ${p.lastReportAt}`);
        if (rotation.candidates.length > 0)
          printLine(`  could be the old key: ${rotation.candidates.join(', ')} (tenantctl parent-key platform-keys)`);
      }),
    );

  parentKey
    .command('platform-keys')
    .description(
      "the parent's active platform keys, each compared with our key record whose platform id is unknown " +
        '(by our records and last use: the platform shows no prefix or fingerprint); needs parent.key',
    )
    .option('--record <rowId>', 'compare with this record of ours (default: the one whose platform id is unknown)')
    .option('--json', 'print JSON')
    .action(async (opts: { record?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<ParentPlatformKeysView>(
          `/v1/parent-key/platform-keys${opts.record ? `?record=${encodeURIComponent(opts.record)}` : ''}`,
        );
        if (opts.json) return printJson(view);
        printLine(
          view.target
            ? `our record ${view.target.rowId} (${view.target.status}, ${view.target.fingerprint ?? '-'}): ` +
                `platform id unknown; compared by ` +
                (view.method === 'our-call'
                  ? 'a call made with it'
                  : view.method === 'switch'
                    ? 'its use since our processes switched away'
                    : 'nothing (no last use to compare)')
            : 'every record of ours knows its platform id',
        );
        for (const k of view.keys)
          printLine(
            `${k.id}  ${k.verdict.padEnd(8)} ${k.name ?? '-'}  last use ${k.lastUsedAt ?? k.lastUse}` +
              `${k.useCount === null ? '' : ` (${k.useCount} uses)`}: ${k.evidence}`,
          );
        printLine(`(${view.notShown})`);
        if (view.target) printLine('name ours with: tenantctl parent-key identify <keyId> --reason <text>');
      }),
    );

  parentKey
    .command('identify')
    .description(
      'record which platform key our record is (audited under your name); a rotation waiting for it goes on. ' +
        "Refused when the key is not the parent's, another record holds it, or its last use says it is not ours",
    )
    .argument('<keyId>', "the platform key's id (tenantctl parent-key platform-keys)")
    .requiredOption('--reason <text>', 'why you are sure (audited)')
    .option('--record <rowId>', 'our record to name (default: the one whose platform id is unknown)')
    .option('--force', 'name it although its last use says it is not ours')
    .option('--json', 'print JSON')
    .action(async (keyId: string, opts: { reason: string; record?: string; force?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const named = await gateway.post<{
          rowId: string;
          platformKeyId: string;
          outcome: string;
          evidence: string;
          rotationWoken: boolean;
        }>('/v1/parent-key/identify', {
          keyId,
          reason: opts.reason,
          ...(opts.record ? { record: opts.record } : {}),
          ...(opts.force ? { force: true } : {}),
        });
        if (opts.json) return printJson(named);
        printLine(
          `${named.outcome === 'recorded' ? 'recorded' : 'already recorded'}: our record ${named.rowId} is ` +
            `platform key ${named.platformKeyId} (${named.evidence})` +
            `${named.rotationWoken ? '; the running rotation looks again now' : ''}`,
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
          printLine(
            `parent key rotated: key ${result.newKey.rowId} (${result.newKey.fingerprint}) is ` +
              `current, old key ${result.oldKey.platformKeyId} revoked`,
          );
        else printLine(`${started.started ? 'started' : 'already running'}: ${started.workflowId}`);
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
        printLine(`${outcome} schedule ${scheduleId}: every ${opts.every}`);
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
        printLine(`${answer.stage}: ${answer.effect}`);
      }),
    );
}

/**
 * `import --key-id`: the id must be an active key in the parent's list as read with this very token (so a typo or
 * another parent's id is refused before anything is written), and held by none of our other records.
 */
async function checkKeyId(
  config: { PLATFORM_BASE_URL?: string | undefined; PLATFORM_TIMEOUT_MS?: number },
  pool: Pool,
  token: string,
  keyId: string,
): Promise<void> {
  const [{ InvalidInputError }, { createPlatformClient }, store, { fingerprintToken }] = await Promise.all([
    import('../../domain/tenant-input.js'),
    import('../../platform/index.js'),
    import('../../db/parent-keys-store.js'),
    import('../../secrets/fingerprint.js'),
  ]);
  const holder = (await store.listParentKeys(pool)).find((r) => r.platformKeyId === keyId);
  if (holder && holder.fingerprint !== fingerprintToken(token))
    throw new InvalidInputError([`key-id: ${keyId} is already our record ${holder.id} (another key)`]);
  if (!config.PLATFORM_BASE_URL)
    throw new InvalidInputError(['PLATFORM_BASE_URL: is required with --key-id (the id is checked on the platform)']);
  const platform = createPlatformClient({
    baseUrl: config.PLATFORM_BASE_URL,
    platformKey: token,
    ...(config.PLATFORM_TIMEOUT_MS ? { timeoutMs: config.PLATFORM_TIMEOUT_MS } : {}),
  });
  const { keys } = await platform.listPlatformKeys({});
  const listed = keys.find((k) => k.id === keyId);
  if (!listed || listed.status === 'revoked')
    throw new InvalidInputError([
      `key-id: ${keyId} is not an active key in the parent's list read with this key ` +
        `(active: ${
          keys
            .filter((k) => k.status !== 'revoked')
            .map((k) => k.id)
            .join(', ') || 'none'
        })`,
    ]);
}
