import {
  ScheduleAlreadyRunning,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type ScheduleOptions,
  type WorkflowHandle,
} from '@temporalio/client';
import {
  findParentKey,
  listLiveProcesses,
  listParentKeys,
  recordParentPlatformKeyId,
  type ParentKeyRow,
} from '../../db/parent-keys-store.js';
import type { Pool } from '../../db/pool.js';
import { PARENT_KEY_ROTATION_SCHEDULE_ID, PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../domain/ids.js';
import { rotateParentKeyInputSchema, type RotateParentKeyInput } from '../../domain/key-slot-input.js';
import { InvalidInputError, parseCallerInput } from '../../domain/tenant-input.js';
import type { ApiKeyRecord, PlatformClient } from '../../platform/index.js';
import type { rotateParentKey } from '../../../workflows/keys/rotate-parent-key.js';
import {
  parentKeyRecordsChangedSignal,
  parentKeyRotationStatusQuery,
  type PendingProcess,
} from '../../../workflows/keys/rotate-parent-key-messages.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from '../../../workflows/keys/rotate-tenant-key-messages.js';
import { currentWaitOf, type WaitView } from '../current-wait.js';
import { SCHEDULE_EVERY } from '../schedule-every.js';
import { queryOrNull } from '../query-run.js';

export interface ParentKeyView {
  /** Our record id: the credential id processes report. */
  id: string;
  platformKeyId: string | null;
  status: string;
  source: string;
  fingerprint: string | null;
  createdAt: string;
  currentSince: string | null;
  revokedAt: string | null;
}

/** A parent key rotation in progress, as `parent-key show` prints it (ids, process ids, times: never a token). */
export interface ParentKeyRotationView {
  workflowId: string;
  runId: string;
  stage: string;
  emergency: boolean;
  /** The run's current wait: what it waits for, since when, the decisions that apply; null while it works. */
  waiting: WaitView | null;
  oldKey: { rowId: string; platformKeyId: string | null } | null;
  newKey: { rowId: string; platformKeyId: string | null } | null;
  /** Live processes not yet on the new key: process identity and last report. */
  notSwitched: PendingProcess[];
  /** While the old key is being named: the active platform keys that could be it. */
  candidates: string[];
  quietCheck: string | null;
}

export interface ParentKeysView {
  current: ParentKeyView | null;
  keys: ParentKeyView[];
  /** Processes that reported within `freshMs`, with the key record each uses. */
  processes: Array<{ processId: string; kind: string; parentKeyId: string | null; seenAgoMs: number }>;
  /** The rotation running now (absent without a Temporal client; null when none runs). */
  rotation?: ParentKeyRotationView | null;
}

/** What `tenantctl parent-key show` prints: ids and fingerprints, never a token; with a client, the rotation too. */
export async function showParentKeys(pool: Pool, freshMs = 60_000, client?: Client): Promise<ParentKeysView> {
  const [rows, processes, rotation] = await Promise.all([
    listParentKeys(pool),
    listLiveProcesses(pool, freshMs),
    // Temporal out of reach: the records are still shown, without the rotation.
    client ? rotationInProgress(client).catch(() => undefined) : Promise.resolve(undefined),
  ]);
  const keys = rows.map((r) => ({
    id: r.id,
    platformKeyId: r.platformKeyId,
    status: r.status,
    source: r.source,
    fingerprint: r.fingerprint,
    createdAt: r.createdAt.toISOString(),
    currentSince: r.currentSince?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }));
  return {
    current: keys.find((k) => k.status === 'current') ?? null,
    keys,
    processes,
    ...(rotation === undefined ? {} : { rotation }),
  };
}

/** The running rotation's stage and wait (its queries); null when none runs. */
async function rotationInProgress(client: Client): Promise<ParentKeyRotationView | null> {
  const handle = client.workflow.getHandle<typeof rotateParentKey>(PARENT_KEY_ROTATION_WORKFLOW_ID);
  const described = await handle.describe().catch(() => undefined);
  if (!described || described.status.name !== 'RUNNING') return null;
  const [status, waiting] = await Promise.all([
    queryOrNull(handle, parentKeyRotationStatusQuery),
    currentWaitOf(handle),
  ]);
  const ref = (k: { rowId: string; platformKeyId: string | null } | null | undefined) =>
    k ? { rowId: k.rowId, platformKeyId: k.platformKeyId } : null;
  return {
    workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
    runId: described.runId,
    stage: status?.stage ?? 'unknown',
    emergency: status?.emergency ?? false,
    waiting,
    oldKey: ref(status?.oldKey),
    newKey: ref(status?.newKey),
    notSwitched: status?.processes.pending ?? [],
    candidates: status?.candidates ?? [],
    quietCheck: status?.quietCheck ?? null,
  };
}

/**
 * How a listed platform key compares with the key record being named. The contract shows no token prefix or
 * fingerprint in a key listing (the token comes back only when a key is created, and the record's other fields
 * are "not shown"), so a key is told apart by the platform id in our records, else by its last use:
 * - `recorded`: this platform id is in our records (the record and its status say which);
 * - `likely`: its use moved with a call we made with the record's key, or it shows no use since our processes
 *   switched away from it, while another key's did not;
 * - `possible`: nothing tells it apart (last use not shown, or every candidate looks the same);
 * - `unlikely`: it shows use our key cannot have made (used after our processes switched away, or still while
 *   our call did not move it).
 */
export type KeyVerdict = 'recorded' | 'likely' | 'possible' | 'unlikely';

export interface PlatformKeyEvidence {
  id: string;
  name: string | null;
  status: string;
  createdAt: string | null;
  lastUsedAt: string | null;
  /** Whether the platform shows last use for it (`seen`, `never`, or `unknown`). */
  lastUse: 'seen' | 'never' | 'unknown';
  useCount: number | null;
  /** Our record holding this platform id, if any. */
  recorded: { rowId: string; status: string } | null;
  verdict: KeyVerdict;
  evidence: string;
}

export interface ParentPlatformKeysView {
  /** The record whose platform id is unknown (the one to name), or null when every record knows its id. */
  target: { rowId: string; status: string; fingerprint: string | null } | null;
  /** How the target was compared: a call made with it (current key), its processes' switch (old key), or none. */
  method: 'our-call' | 'switch' | 'none';
  /** The parent's active platform keys (revoked ones are left out). */
  keys: PlatformKeyEvidence[];
  notShown: string;
}

const NOT_SHOWN =
  'the contract shows no token prefix or fingerprint in a key listing (the token is returned only when a key is ' +
  'created): a key is told apart by the platform id in our records, else by its last use';
/** Platform and our clocks may differ this much before a last use counts as after our switch. */
const CLOCK_MARGIN_MS = 5_000;

function isTarget(r: ParentKeyRow): boolean {
  return r.platformKeyId === null && ['current', 'previous', 'ready'].includes(r.status);
}

/**
 * The parent's active platform keys, each compared with the record to name (`rowId`, default: the one whose
 * platform id is unknown, a rotation's old key first). Reads the list with the key this process holds (the
 * current one); for the current record, reads it again a second later: our own call moved our key's last use.
 */
export async function listParentPlatformKeys(
  deps: { pool: Pool; platform: PlatformClient; client?: Client; probeGapMs?: number },
  options: { rowId?: string } = {},
): Promise<ParentPlatformKeysView> {
  const rows = await listParentKeys(deps.pool);
  const target = options.rowId
    ? rows.find((r) => r.id === options.rowId)
    : (rows.find((r) => isTarget(r) && r.status === 'previous') ?? rows.find(isTarget));
  if (options.rowId && !target) throw new ParentKeyNamingError('missing', `no parent key record ${options.rowId}`);
  const first = (await deps.platform.listPlatformKeys({})).keys;
  let keys = first;
  let method: ParentPlatformKeysView['method'] = 'none';
  let switchedAt: number | null = null;
  if (target && target.platformKeyId === null && target.status === 'current') {
    // Our call between the two reads moves our key's last use (a second apart: whole-second timestamps move too).
    await new Promise((r) => setTimeout(r, deps.probeGapMs ?? 1_100));
    keys = (await deps.platform.listPlatformKeys({})).keys;
    method = 'our-call';
  } else if (target && target.platformKeyId === null) {
    const rotation = deps.client ? await rotationSwitchedAt(deps.client) : null;
    const newer = rows.find((r) => r.status === 'current');
    switchedAt = rotation ?? (newer?.currentSince ? newer.currentSince.getTime() + 60_000 : null);
    method = switchedAt === null ? 'none' : 'switch';
  }
  const recordOf = new Map(rows.filter((r) => r.platformKeyId).map((r) => [r.platformKeyId!, r]));
  const before = new Map(first.map((k) => [k.id, k]));
  const active = keys.filter((k) => k.status !== 'revoked');
  const judged = active.map((k) => judge(k, before.get(k.id), recordOf.get(k.id), method, switchedAt));
  // `likely` only when it tells the key apart: one candidate looks like ours and at least one other does not.
  const open = judged.filter((j) => j.verdict !== 'recorded');
  const fits = open.filter((j) => j.verdict === 'likely');
  if (fits.length !== 1 || open.length < 2)
    for (const j of fits) {
      j.verdict = 'possible';
      if (open.length > 1) j.evidence += '; other keys look the same';
    }
  return {
    target: target ? { rowId: target.id, status: target.status, fingerprint: target.fingerprint } : null,
    method,
    keys: judged,
    notShown: NOT_SHOWN,
  };
}

function judge(
  key: ApiKeyRecord,
  before: ApiKeyRecord | undefined,
  record: ParentKeyRow | undefined,
  method: ParentPlatformKeysView['method'],
  switchedAt: number | null,
): PlatformKeyEvidence {
  const base = {
    id: key.id,
    name: key.name ?? null,
    status: key.status,
    createdAt: key.createdAt ?? null,
    lastUsedAt: key.lastUsedAt ?? null,
    lastUse: key.lastUse.state,
    useCount: key.useCount ?? null,
    recorded: record ? { rowId: record.id, status: record.status } : null,
  };
  if (record)
    return { ...base, verdict: 'recorded', evidence: `our record ${record.id} (${record.status}) holds this id` };
  if (!key.lastUseKnown) return { ...base, verdict: 'possible', evidence: 'the platform shows no last use for it' };
  if (method === 'our-call') {
    const moved =
      (key.useCount !== undefined && before?.useCount !== undefined && key.useCount > before.useCount) ||
      (key.lastUsedAt != null && key.lastUsedAt !== (before?.lastUsedAt ?? null));
    return moved
      ? { ...base, verdict: 'likely', evidence: 'its last use moved with the call we made with our key' }
      : { ...base, verdict: 'unlikely', evidence: 'its last use did not move with the call we made with our key' };
  }
  if (method === 'switch' && switchedAt !== null) {
    const at = key.lastUsedAt ? Date.parse(key.lastUsedAt) : null;
    const since = new Date(switchedAt).toISOString();
    return at !== null && at > switchedAt + CLOCK_MARGIN_MS
      ? {
          ...base,
          verdict: 'unlikely',
          evidence: `used at ${key.lastUsedAt}, after every one of our processes had switched away (${since})`,
        }
      : { ...base, verdict: 'likely', evidence: `no use since our processes switched away (${since})` };
  }
  return { ...base, verdict: 'possible', evidence: 'nothing to compare it with' };
}

async function rotationSwitchedAt(client: Client): Promise<number | null> {
  const handle = client.workflow.getHandle(PARENT_KEY_ROTATION_WORKFLOW_ID);
  const status = await queryOrNull(handle, parentKeyRotationStatusQuery);
  return status?.switchedAt ? Date.parse(status.switchedAt) : null;
}

/** Why naming a key cannot apply: `missing` (no such record or listed key) or `conflict` (the records say else). */
export class ParentKeyNamingError extends Error {
  override name = 'ParentKeyNamingError';
  constructor(
    readonly kind: 'missing' | 'conflict',
    message: string,
  ) {
    super(message);
  }
}

const PLATFORM_KEY_ID_RULE = '1-200 characters, no white space';
const PLATFORM_KEY_ID = /^\S{1,200}$/;

/** A platform key id as an operator types it (`--key-id`, `identify <keyId>`): checked before anything is read. */
export function checkPlatformKeyId(value: unknown, field = 'keyId'): string {
  if (typeof value !== 'string' || !PLATFORM_KEY_ID.test(value))
    throw new InvalidInputError([`${field}: must be a platform key id (${PLATFORM_KEY_ID_RULE})`]);
  return value;
}

/**
 * Records which listed platform key our record is (`tenantctl parent-key identify`), confirmed by the operator who
 * names it and audited under that name. Refused with the reason: a key that is not an active key of the parent, an
 * id another record holds, a record that already knows its id, or a key whose last use says it is not ours (unless
 * `force`). A running rotation waiting for the name is woken to look again.
 */
export async function identifyParentKey(
  deps: { pool: Pool; platform: PlatformClient; client?: Client; probeGapMs?: number },
  input: { keyId: string; rowId?: string; operator: string; reason: string; force?: boolean },
): Promise<{
  rowId: string;
  platformKeyId: string;
  outcome: 'recorded' | 'already';
  evidence: string;
  rotationWoken: boolean;
}> {
  const keyId = checkPlatformKeyId(input.keyId);
  const view = await listParentPlatformKeys(deps, input.rowId ? { rowId: input.rowId } : {});
  const rowId = input.rowId ?? view.target?.rowId;
  if (!rowId) throw new ParentKeyNamingError('conflict', 'every parent key record already knows its platform id');
  const row = await findParentKey(deps.pool, rowId);
  if (!row) throw new ParentKeyNamingError('missing', `no parent key record ${rowId}`);
  if (row.platformKeyId && row.platformKeyId !== keyId)
    throw new ParentKeyNamingError('conflict', `record ${rowId} is already platform key ${row.platformKeyId}`);
  const listed = view.keys.find((k) => k.id === keyId);
  if (!listed)
    throw new ParentKeyNamingError(
      'missing',
      `${keyId} is not an active platform key of the parent (listed: ` +
        `${view.keys.map((k) => k.id).join(', ') || 'none'})`,
    );
  if (listed.recorded && listed.recorded.rowId !== rowId)
    throw new ParentKeyNamingError('conflict', `${keyId} is already our record ${listed.recorded.rowId}`);
  if (listed.verdict === 'unlikely' && !input.force)
    throw new ParentKeyNamingError(
      'conflict',
      `${keyId} does not look like our key: ${listed.evidence} (name it anyway with force, if you are sure)`,
    );
  const outcome = await recordParentPlatformKeyId(
    deps.pool,
    { rowId, platformKeyId: keyId },
    {
      actor: `operator:${input.operator}`,
      action: 'parent_key.identified',
      subject: keyId,
      details: { rowId, reason: input.reason, evidence: listed.evidence, force: input.force === true },
    },
  );
  if (outcome === 'conflict')
    throw new ParentKeyNamingError('conflict', `${keyId} is already held by another of our records`);
  if (outcome === 'other_id' || outcome === 'missing')
    throw new ParentKeyNamingError('conflict', `record ${rowId} changed meanwhile: look again`);
  let rotationWoken = false;
  if (deps.client)
    rotationWoken = await deps.client.workflow
      .getHandle(PARENT_KEY_ROTATION_WORKFLOW_ID)
      .signal(parentKeyRecordsChangedSignal)
      .then(
        () => true,
        () => false,
      );
  return { rowId, platformKeyId: keyId, outcome, evidence: listed.evidence, rotationWoken };
}

/** Starts the parent key rotation, or joins the one running (never two at once: one workflow id). */
export async function startParentKeyRotation(
  client: Client,
  rawInput: RotateParentKeyInput | unknown,
  options: { taskQueue: string },
): Promise<WorkflowHandle<typeof rotateParentKey> & { started: boolean }> {
  const input = parseCallerInput(rotateParentKeyInputSchema, rawInput ?? {});
  try {
    const handle = await client.workflow.start<typeof rotateParentKey>('rotateParentKey', {
      taskQueue: options.taskQueue,
      workflowId: PARENT_KEY_ROTATION_WORKFLOW_ID,
      args: [input],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return Object.assign(handle, { started: true });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  return Object.assign(client.workflow.getHandle<typeof rotateParentKey>(PARENT_KEY_ROTATION_WORKFLOW_ID), {
    started: false,
  });
}

/** The parent key rotation on a Temporal Schedule (overlap SKIP; the action is the launcher workflow). */
export async function scheduleParentKeyRotation(
  client: Client,
  rawInput: RotateParentKeyInput | unknown,
  every: string,
  taskQueue: string,
): Promise<{ scheduleId: string; outcome: 'created' | 'updated' }> {
  if (!SCHEDULE_EVERY.test(every)) throw new InvalidInputError([`every: must be a duration like 30d (got ${every})`]);
  const input = parseCallerInput(rotateParentKeyInputSchema, rawInput ?? {});
  const options: ScheduleOptions = {
    scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID,
    spec: { intervals: [{ every }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'rotateParentKeyOnSchedule',
      workflowId: 'rotate-parent-key-scheduled',
      taskQueue,
      args: [input],
    },
    policies: { overlap: 'SKIP', catchupWindow: '1h' },
    memo: { kind: 'parent-key-rotation' },
  };
  try {
    await client.schedule.create(options);
    return { scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID, outcome: 'created' };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(PARENT_KEY_ROTATION_SCHEDULE_ID).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action as typeof previous.action,
    policies: { ...previous.policies, overlap: 'SKIP' },
  }));
  return { scheduleId: PARENT_KEY_ROTATION_SCHEDULE_ID, outcome: 'updated' };
}

export const PARENT_KEY_DECISIONS = {
  'revoke-anyway': revokeAnywayUpdate,
  abort: abortRotationUpdate,
  'retry-key-create': retryKeyCreateUpdate,
  emergency: escalateToEmergencyUpdate,
} as const;
