import type { Command } from 'commander';
import type { DeployerSpec, RotationTimings } from '../../domain/rotation-input.js';
import type { ScheduleCommand, RotationScheduleView } from '../../client/keys/rotation-schedules.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import type { GatewayClient } from '../../api-client/gateway-client.js';
import type { RotateTenantKeyResult } from '../../../workflows/keys/rotate-tenant-key-messages.js';
import type { AdoptTenantKeysResult } from '../../domain/import-input.js';
import { DEFAULT_TIMINGS } from '../../domain/rotation-defaults.js';
import { fleetAdoptionScheduleId, fleetScheduleId, rotationScheduleId } from '../../domain/ids.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

// Every command here is a client of the gateway's /v1 API: the server starts, schedules and decides.

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
    .option(
      '--quiet-period <duration>',
      `no use of the old key for this long before it is revoked (default ${DEFAULT_TIMINGS.quietPeriod})`,
    )
    .option(
      '--propagation-allowance <duration>',
      `consumers may use the old key this long after deploy (default ${DEFAULT_TIMINGS.propagationAllowance})`,
    )
    .option(
      '--poll-interval <duration>',
      `how often key records are read while waiting (default ${DEFAULT_TIMINGS.pollInterval})`,
    )
    .option(
      '--quiet-deadline <duration>',
      `after deploy: hold for an operator if not quiet by then (default ${DEFAULT_TIMINGS.quietDeadline})`,
    )
    .option(
      '--overlap-window <duration>',
      `without last-use information: wait this long after deploy (default ${DEFAULT_TIMINGS.overlapWindow})`,
    )
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

function scheduleIdOf(
  externalRef: string | undefined,
  opts: { fleet?: boolean; adopt?: boolean; slot: string },
): string {
  if (opts.fleet === Boolean(externalRef)) throw new Error('name one tenant (external ref) or --fleet');
  if (opts.adopt && !opts.fleet) throw new Error('--adopt: a schedule adopts for the fleet (--fleet --adopt)');
  if (opts.adopt) return fleetAdoptionScheduleId(opts.slot);
  return opts.fleet ? fleetScheduleId(opts.slot) : rotationScheduleId(externalRef!, opts.slot);
}

/** `--wait`: the slot's latest run (a rotation or an adoption), polled through the gateway until it ended. */
async function waitForRun<T>(gateway: GatewayClient, externalRef: string, slot: string): Promise<T> {
  const { resultOfRun } = await import('../poll-run.js');
  return resultOfRun<T>(
    gateway,
    `/v1/tenants/${segment(externalRef, 'externalRef')}/rotations/${segment(slot, 'slot')}`,
  );
}

async function adopt(
  gateway: GatewayClient,
  externalRef: string,
  opts: TimingFlags &
    DeployerFlags & { slot: string; emergency?: boolean; reason?: string; wait?: boolean; json?: boolean },
): Promise<void> {
  if (opts.emergency)
    throw new Error(
      '--adopt: cannot be combined with --emergency (an unmanaged key is revoked only when quiet, or by revoke-anyway)',
    );
  const options = timingsOf(opts);
  const deployer = deployerOf(opts);
  const started = await gateway.post<{ workflowId: string }>(
    `/v1/tenants/${segment(externalRef, 'externalRef')}/adopt`,
    {
      slot: opts.slot,
      ...(opts.reason ? { reason: opts.reason } : {}),
      ...(options ? { options } : {}),
      ...(deployer ? { deployer } : {}),
    },
  );
  const result = opts.wait ? await waitForRun<AdoptTenantKeysResult>(gateway, externalRef, opts.slot) : undefined;
  if (opts.json) printJson({ workflowId: started.workflowId, started: true, ...(result ? { result } : {}) });
  else if (result)
    printLine(
      `adoption ${result.outcome}: slot ${result.slot} managed key ${result.keyId} (${result.fingerprint}); ` +
        `revoked ${result.revoked.join(', ') || 'none'}; kept unmanaged ` +
        `${result.kept.join(', ') || 'none'}`,
    );
  else printLine(`started: ${started.workflowId} (follow with: tenantctl status ${externalRef})`);
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
          wait?: boolean;
          json?: boolean;
        },
    ) =>
      withGateway(async (gateway) => {
        if (opts.adopt) return adopt(gateway, externalRef, opts);
        const options = timingsOf(opts);
        const deployer = deployerOf(opts);
        // The gateway refuses unknown, closing and imported-only tenants before anything starts.
        const handle = await gateway.post<{ workflowId: string; started: boolean }>(
          `/v1/tenants/${segment(externalRef, 'externalRef')}/rotate`,
          {
            slot: opts.slot,
            emergency: Boolean(opts.emergency),
            ...(opts.reason ? { reason: opts.reason } : {}),
            ...(options ? { options } : {}),
            ...(deployer ? { deployer } : {}),
          },
        );
        const started = { workflowId: handle.workflowId, started: handle.started };
        const result = opts.wait ? await waitForRun<RotateTenantKeyResult>(gateway, externalRef, opts.slot) : undefined;
        if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
        else if (result)
          printLine(
            `rotation ${result.outcome}: slot ${result.slot} g${result.fromGeneration}→g${result.toGeneration}, ` +
              `current key ${result.keyId} (${result.fingerprint})`,
          );
        else
          printLine(
            `${
              handle.started
                ? 'started'
                : opts.emergency
                  ? 'escalated the running rotation to emergency'
                  : 'already running'
            }: ` + `${handle.workflowId} (follow with: tenantctl status ${externalRef})`,
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
      withGateway(async (gateway) => {
        scheduleIdOf(externalRef, opts);
        const options = timingsOf(opts);
        const deployer = deployerOf(opts);
        const extra = { ...(options ? { options } : {}), ...(deployer ? { deployer } : {}) };
        const made = await gateway.post<{ scheduleId: string; outcome: string }>('/v1/rotation-schedules', {
          every: opts.every,
          ...(opts.jitter ? { jitter: opts.jitter } : {}),
          ...(opts.fleet
            ? {
                fleet: true,
                slot: opts.slot,
                concurrency: Number(opts.concurrency),
                ...(opts.adopt ? { adopt: true } : {}),
              }
            : { externalRef, slot: opts.slot }),
          ...extra,
        });
        printLine(
          `${made.outcome} schedule ${made.scheduleId}: every ` +
            `${opts.every}${opts.jitter ? ` (jitter ${opts.jitter})` : ''}, ` +
            `overlap SKIP`,
        );
      }),
  );

  rotation
    .command('list')
    .description('rotation schedules')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const listed = await gateway.get<RotationScheduleView[]>('/v1/rotation-schedules');
        if (opts.json) printJson(listed);
        else
          for (const s of listed)
            printLine(
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
        withGateway(async (gateway) => {
          const scheduleId = scheduleIdOf(externalRef, opts);
          await gateway.post(
            `/v1/rotation-schedules/${segment(scheduleId, 'scheduleId')}/${name satisfies ScheduleCommand}`,
          );
          printLine(`${name}: ${scheduleId}`);
        }),
      );
  }

  for (const [name, description] of [
    ['revoke-anyway', 'a rotation waiting for quiet or held: revoke the old key although it did not go quiet'],
    ['abort', 'a rotation waiting for quiet, held or at the key limit: keep the old key, revoke the new one'],
    ['retry-key-create', 'a rotation at the active-key limit: an unused key was revoked, create the new key now'],
  ] as const) {
    rotation
      .command(name)
      .description(`${description} (who decides: the token's name)`)
      .argument('<externalRef>')
      .option('--slot <slot>', 'key slot', 'default')
      .requiredOption('--reason <text>', 'why (audited)')
      .option('--json', 'print the answer as JSON')
      .action(async (externalRef: string, opts: { slot: string; reason: string; json?: boolean }) =>
        withGateway(async (gateway) => {
          const { workflowId, decision, ...answer } = await gateway.post<
            DecisionAnswer & { workflowId: string; decision: string }
          >(`/v1/tenants/${segment(externalRef, 'externalRef')}/rotations/${segment(opts.slot, '--slot')}/${name}`, {
            reason: opts.reason,
          });
          if (opts.json) printJson({ workflowId, decision, ...answer });
          else
            printLine(
              `${decision} accepted by ${workflowId} (now ${answer.stage}` +
                `${answer.transferState ? `, transfer ${answer.transferState}` : ''}): ${answer.effect}`,
            );
        }),
      );
  }

  rotation
    .command('cancel')
    .description('cancel a running rotation and wait until it has rolled back (no extra key left)')
    .argument('<externalRef>')
    .option('--slot <slot>', 'key slot', 'default')
    .action(async (externalRef: string, opts: { slot: string }) =>
      withGateway(async (gateway) => {
        const { GatewayCallError } = await import('../../api-client/gateway-client.js');
        const status = await gateway
          .post<{ stage: string }>(
            `/v1/tenants/${segment(externalRef, 'externalRef')}/rotations/${segment(opts.slot, '--slot')}/cancel`,
          )
          .catch((error: unknown) => {
            if (error instanceof GatewayCallError && error.code === 'RUN_NOT_FOUND') return null;
            throw error;
          });
        printLine(
          status
            ? `rotation of ${externalRef} slot ${opts.slot}: ${status.stage}`
            : `no rotation of ${externalRef} slot ${opts.slot}`,
        );
      }),
    );
}
