import type { Command } from 'commander';
import type { DeployerSpec, RotationTimings } from '../../domain/rotation-input.js';
import type { ScheduleCommand } from '../../client/rotation-schedules.js';
import { fleetAdoptionScheduleId, fleetScheduleId, rotationScheduleId, rotationWorkflowId } from '../../domain/ids.js';
import type { CliRuntime } from '../runtime.js';
import { printJson, withRuntime } from '../run.js';

// Each action loads what it uses (see run.ts): `tenantctl --help` loads none of it.
const schedules = () => import('../../client/rotation-schedules.js');
const starting = () => import('../../client/start-rotation.js');

interface TimingFlags {
  quietPeriod?: string;
  propagationAllowance?: string;
  pollInterval?: string;
  quietDeadline?: string;
  overlapWindow?: string;
}
interface DeployerFlags {
  deployer?: string;
  project?: string;
  envVar?: string;
}

function withTimingFlags(command: Command): Command {
  return command
    .option('--quiet-period <duration>', 'no use of the old key for this long before it is revoked (default 1h)')
    .option('--propagation-allowance <duration>', 'consumers may use the old key this long after deploy (default 15m)')
    .option('--poll-interval <duration>', 'how often key records are read while waiting (default 1m)')
    .option('--quiet-deadline <duration>', 'after deploy: hold for an operator if not quiet by then (default 24h)')
    .option('--overlap-window <duration>', 'without last-use information: wait this long after deploy (default 24h)')
    .option('--deployer <kind>', 'notify | project-env (default: ROTATION_DEPLOYER)')
    .option(
      '--project <projectId>',
      'project-env: the project (default: every tenant project that defines the variable)',
    )
    .option('--env-var <name>', 'project-env: the variable (default: ROTATION_ENV_VAR)');
}

function timingsOf(flags: TimingFlags): RotationTimings | undefined {
  const entries = Object.entries({
    quietPeriod: flags.quietPeriod,
    propagationAllowance: flags.propagationAllowance,
    pollInterval: flags.pollInterval,
    quietDeadline: flags.quietDeadline,
    overlapWindow: flags.overlapWindow,
  }).filter(([, v]) => v !== undefined);
  return entries.length ? (Object.fromEntries(entries) as RotationTimings) : undefined;
}

function deployerOf(flags: DeployerFlags): DeployerSpec | undefined {
  if (!flags.deployer) return undefined;
  if (flags.deployer === 'notify') return { kind: 'notify' };
  if (flags.deployer === 'project-env')
    return {
      kind: 'project-env',
      ...(flags.project ? { projectId: flags.project } : {}),
      ...(flags.envVar ? { variable: flags.envVar } : {}),
    };
  throw new Error('--deployer: must be notify or project-env');
}

/** A clear refusal before anything starts: unknown tenants and closing ones are never rotated. */
async function requireRotatable(runtime: CliRuntime, externalRef: string): Promise<void> {
  const { findTenant, TenantNotFoundError } = await import('../../db/tenants-store.js');
  const tenant = await findTenant(runtime.pool(), externalRef);
  if (!tenant) throw new TenantNotFoundError(externalRef);
  if (tenant.status === 'closing' || tenant.status === 'closed')
    throw new Error(`tenant ${externalRef} is ${tenant.status}: its keys are not rotated`);
}

/** An imported tenant's slot holds only unmanaged keys: a plain rotation has no key of ours to replace. */
async function refuseUnmanagedOnly(runtime: CliRuntime, externalRef: string, slot: string): Promise<void> {
  const [{ listUnmanagedKeys }, { findActiveKey }] = await Promise.all([
    import('../../db/adoptions-store.js'),
    import('../../db/tenant-keys-store.js'),
  ]);
  const pool = runtime.pool();
  if ((await listUnmanagedKeys(pool, externalRef, slot)).length && !(await findActiveKey(pool, externalRef, slot)))
    throw new Error(
      `tenant ${externalRef} has only unmanaged (imported) keys in slot ${slot}: rotate ` +
        `it with --adopt; nothing was started`,
    );
}

function scheduleIdOf(
  externalRef: string | undefined,
  opts: { fleet?: boolean; adopt?: boolean; slot: string },
): string {
  if (opts.fleet === Boolean(externalRef)) throw new Error('name one tenant (external ref) or --fleet');
  if (opts.adopt && !opts.fleet) throw new Error('--adopt: a schedule adopts for the fleet (--fleet --adopt)');
  if (opts.adopt) return fleetAdoptionScheduleId(opts.slot);
  return opts.fleet ? fleetScheduleId(opts.slot) : rotationScheduleId(externalRef!, opts.slot);
}

async function adopt(
  runtime: CliRuntime,
  externalRef: string,
  opts: TimingFlags &
    DeployerFlags & { slot: string; emergency?: boolean; reason?: string; wait?: boolean; json?: boolean },
): Promise<void> {
  if (opts.emergency)
    throw new Error(
      '--adopt: cannot be combined with --emergency (an unmanaged key is revoked only when quiet, or by revoke-anyway)',
    );
  const [{ startAdoption }, { deployerReadinessOf }] = await Promise.all([
    import('../../client/start-adoption.js'),
    starting(),
  ]);
  const options = timingsOf(opts);
  const deployer = deployerOf(opts);
  const handle = await startAdoption(
    { client: await runtime.client(), db: runtime.pool() },
    {
      externalRef,
      slot: opts.slot,
      ...(opts.reason ? { reason: opts.reason } : {}),
      ...(options ? { options } : {}),
      ...(deployer ? { deployer } : {}),
    },
    { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE, deployers: deployerReadinessOf(runtime.config) },
  );
  const result = opts.wait ? await handle.result() : undefined;
  if (opts.json) printJson({ workflowId: handle.workflowId, started: true, ...(result ? { result } : {}) });
  else if (result)
    console.log(
      `adoption ${result.outcome}: slot ${result.slot} managed key ${result.keyId} (${result.fingerprint}); ` +
        `revoked ${result.revoked.join(', ') || 'none'}; kept unmanaged ` +
        `${result.kept.join(', ') || 'none'}`,
    );
  else console.log(`started: ${handle.workflowId} (follow with: tenantctl status ${externalRef})`);
}

export function registerRotationCommands(program: Command): void {
  withTimingFlags(
    program
      .command('rotate-key')
      .description(
        "rotate a tenant's key by overlap: create, deploy, verify, wait until the old key is quiet, revoke it",
      )
      .argument('<externalRef>')
      .option('--slot <slot>', 'key slot', 'default')
      .option('--emergency', 'after a leak: quiet period zero, the old key is revoked right after deploy')
      .option(
        '--adopt',
        "an imported tenant: issue and deploy a managed key, then revoke each of the slot's unmanaged keys once quiet",
      )
      .option('--reason <text>', 'why (audited)')
      .option('--operator <name>', 'who asks (audited when escalating a running rotation)')
      .option('--wait', 'wait for the rotation to finish')
      .option('--json', 'print JSON'),
  ).action(
    async (
      externalRef: string,
      opts: TimingFlags &
        DeployerFlags & {
          slot: string;
          emergency?: boolean;
          adopt?: boolean;
          reason?: string;
          operator?: string;
          wait?: boolean;
          json?: boolean;
        },
    ) =>
      withRuntime(async (runtime) => {
        await requireRotatable(runtime, externalRef);
        if (opts.adopt) return adopt(runtime, externalRef, opts);
        await refuseUnmanagedOnly(runtime, externalRef, opts.slot);
        const { deployerReadinessOf, startRotation } = await starting();
        const options = timingsOf(opts);
        const deployer = deployerOf(opts);
        const input = {
          externalRef,
          slot: opts.slot,
          emergency: Boolean(opts.emergency),
          ...(opts.reason ? { reason: opts.reason } : {}),
          ...(options ? { options } : {}),
          ...(deployer ? { deployer } : {}),
        };
        const handle = await startRotation(await runtime.client(), input, {
          taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
          deployers: deployerReadinessOf(runtime.config),
          ...(opts.operator || runtime.safeOps.operators.size > 0 ? { operator: runtime.operator(opts.operator) } : {}),
        });
        const started = { workflowId: handle.workflowId, started: handle.started };
        const result = opts.wait ? await handle.result() : undefined;
        if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
        else if (result)
          console.log(
            `rotation ${result.outcome}: slot ${result.slot} g${result.fromGeneration}→g${result.toGeneration}, ` +
              `current key ${result.keyId} (${result.fingerprint})`,
          );
        else
          console.log(
            `${handle.started ? 'started' : opts.emergency ? 'escalated the running rotation to emergency' : 'already running'}: ` +
              `${handle.workflowId} (follow with: tenantctl status ${externalRef})`,
          );
      }),
  );

  const rotation = program.command('rotation').description('key rotation: schedules and operator decisions');

  withTimingFlags(
    rotation
      .command('schedule')
      .description('rotate a tenant slot (or, with --fleet, every active tenant) on a Temporal Schedule')
      .argument('[externalRef]')
      .option('--fleet', 'every active tenant, with bounded concurrency under the platform rate limit')
      .option(
        '--adopt',
        'with --fleet: adopt the unmanaged keys of every imported tenant (schedule rotation-fleet:<slot>:adopt)',
      )
      .option('--slot <slot>', 'key slot', 'default')
      .requiredOption('--every <duration>', 'interval, e.g. 30d')
      .option('--jitter <duration>', 'random delay added to each run, e.g. 6h')
      .option('--concurrency <n>', 'fleet: rotations at once', '50'),
  ).action(
    async (
      externalRef: string | undefined,
      opts: TimingFlags &
        DeployerFlags & {
          fleet?: boolean;
          adopt?: boolean;
          slot: string;
          every: string;
          jitter?: string;
          concurrency: string;
        },
    ) =>
      withRuntime(async (runtime) => {
        scheduleIdOf(externalRef, opts);
        const options = timingsOf(opts);
        const deployer = deployerOf(opts);
        const extra = { ...(options ? { options } : {}), ...(deployer ? { deployer } : {}) };
        // Every run the schedule starts would fail on a deployer that cannot run: refuse the schedule.
        const [{ assertDeployerReady, deployerReadinessOf }, { scheduleFleetRotation, scheduleTenantRotation }] =
          await Promise.all([starting(), schedules()]);
        assertDeployerReady({ deployer }, deployerReadinessOf(runtime.config));
        const times = { every: opts.every, jitter: opts.jitter };
        const client = await runtime.client();
        const queue = runtime.config.TEMPORAL_TASK_QUEUE;
        if (!opts.fleet) await requireRotatable(runtime, externalRef!);
        const made = opts.fleet
          ? await scheduleFleetRotation(
              client,
              {
                slot: opts.slot,
                concurrency: Number(opts.concurrency),
                ...(opts.adopt ? { adopt: true } : {}),
                ...extra,
              },
              times,
              queue,
            )
          : await scheduleTenantRotation(
              client,
              { externalRef: externalRef!, slot: opts.slot, ...extra },
              times,
              queue,
            );
        console.log(
          `${made.outcome} schedule ${made.scheduleId}: every ${opts.every}${opts.jitter ? ` (jitter ${opts.jitter})` : ''}, ` +
            `overlap SKIP`,
        );
      }),
  );

  rotation
    .command('list')
    .description('rotation schedules')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { listRotationSchedules } = await schedules();
        const listed = await listRotationSchedules(await runtime.client());
        if (opts.json) printJson(listed);
        else
          for (const s of listed)
            console.log(
              `${s.scheduleId.padEnd(40)} ${s.paused ? 'paused ' : 'active '} next ${s.nextActionTimes[0] ?? '-'}`,
            );
      }),
    );

  for (const [name, description] of [
    ['pause', 'pause a rotation schedule'],
    ['unpause', 'resume a paused rotation schedule'],
    ['delete', 'delete a rotation schedule (running rotations continue)'],
    ['run-now', 'trigger a rotation schedule now (skipped if its rotation is running)'],
  ] as const) {
    rotation
      .command(name)
      .description(description)
      .argument('[externalRef]')
      .option('--fleet', 'the fleet schedule')
      .option('--adopt', 'with --fleet: the fleet adoption schedule')
      .option('--slot <slot>', 'key slot', 'default')
      .action(async (externalRef: string | undefined, opts: { fleet?: boolean; adopt?: boolean; slot: string }) =>
        withRuntime(async (runtime) => {
          const scheduleId = scheduleIdOf(externalRef, opts);
          const { controlSchedule } = await schedules();
          await controlSchedule(await runtime.client(), scheduleId, name satisfies ScheduleCommand);
          console.log(`${name}: ${scheduleId}`);
        }),
      );
  }

  for (const [name, updateName, description] of [
    [
      'revoke-anyway',
      'revokeAnywayUpdate',
      'a rotation waiting for quiet or held: revoke the old key although it did not go quiet',
    ],
    [
      'abort',
      'abortRotationUpdate',
      'a rotation waiting for quiet, held or at the key limit: keep the old key, revoke the new one',
    ],
    [
      'retry-key-create',
      'retryKeyCreateUpdate',
      'a rotation at the active-key limit: an unused key was revoked, create the new key now',
    ],
  ] as const) {
    rotation
      .command(name)
      .description(description)
      .argument('<externalRef>')
      .option('--slot <slot>', 'key slot', 'default')
      .option('--operator <name>', 'who acts (audited); only without an OPERATORS list, where the token says who')
      .requiredOption('--reason <text>', 'why (audited)')
      .option('--json', 'print the answer as JSON')
      .action(async (externalRef: string, opts: { slot: string; operator?: string; reason: string; json?: boolean }) =>
        withRuntime(async (runtime) => {
          const [messages, { sendDecision }, { printDecision }] = await Promise.all([
            import('../../../workflows/rotate-tenant-key-messages.js'),
            import('../../client/send-decision.js'),
            import('../decisions.js'),
          ]);
          const update = messages[updateName];
          const workflowId = rotationWorkflowId(externalRef, opts.slot);
          const answer = await sendDecision(await runtime.client(), workflowId, update, {
            operator: runtime.operator(opts.operator),
            reason: opts.reason,
          });
          printDecision(workflowId, update.name, answer, opts.json);
        }),
      );
  }

  rotation
    .command('cancel')
    .description('cancel a running rotation and wait until it has rolled back (no extra key left)')
    .argument('<externalRef>')
    .option('--slot <slot>', 'key slot', 'default')
    .action(async (externalRef: string, opts: { slot: string }) =>
      withRuntime(async (runtime) => {
        const { cancelRotation } = await starting();
        const status = await cancelRotation(await runtime.client(), externalRef, opts.slot);
        console.log(
          status
            ? `rotation of ${externalRef} slot ${opts.slot}: ${status.stage}`
            : `no rotation of ${externalRef} slot ${opts.slot}`,
        );
      }),
    );
}
