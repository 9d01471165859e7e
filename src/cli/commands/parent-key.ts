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
    .description('seal a platform key into our records and make it current (the token is read from stdin)')
    .requiredOption('--operator <name>', 'who imports it (audited)')
    .requiredOption('--reason <text>', 'why (audited)')
    .option('--from-env', 'read PLATFORM_API_KEY instead of stdin')
    .option('--json', 'print JSON')
    .action(async (opts: { operator: string; reason: string; fromEnv?: boolean; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ checkDecisionBy }, { InvalidInputError }, { masterKeysOf }, { createVault }, source] =
          await Promise.all([
            import('../../domain/operator-decisions.js'),
            import('../../domain/tenant-input.js'),
            import('../../main/wiring/deps.js'),
            import('../../secrets/vault.js'),
            import('../../secrets/parent-key-source.js'),
          ]);
        const by = checkDecisionBy({ operator: opts.operator, reason: opts.reason });
        if (!by.ok) throw new InvalidInputError(by.problems);
        const token = opts.fromEnv ? (runtime.config.PLATFORM_API_KEY ?? '') : await readStdin();
        if (!source.PARENT_KEY_PATTERN.test(token))
          throw new InvalidInputError([
            `token: must be a platform key (svpk_ followed by at least 8 characters, no white space)${opts.fromEnv ? ' in PLATFORM_API_KEY' : ' on stdin'}`,
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
              ? `imported ${result.fingerprint}: it is the current parent key (processes switch within PARENT_KEY_REFRESH_MS)`
              : `${result.fingerprint} is already in our records: nothing changed`,
          );
      }),
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
            `key ${k.id}: ${k.status.padEnd(8)} ${k.fingerprint ?? '-'} platform id ${k.platformKeyId ?? '(unknown)'} (${k.source})`,
          );
        for (const p of view.processes)
          console.log(
            `process ${p.processId} (${p.kind}): uses key ${p.parentKeyId ?? '-'}, seen ${p.seenAgoMs} ms ago`,
          );
      }),
    );
}
