import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import {
  Client,
  Connection,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import { CombinedWorkerRunError, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { QueryDefinition, UpdateDefinition } from '@temporalio/common';
import { expect, inject } from 'vitest';
import type { Activities } from '../../activities/index.js';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { verifyThenObserve } from '../../activities/keys/rotation.js';
import { watchThenObserve } from '../../activities/keys/watch-key-usage.js';
import { platformTaskQueue } from '../../src/domain/ids.js';
import { currentWaitQuery, type WaitView } from '../../workflows/waits-messages.js';
import { quietLogger } from './quiet-logger.js';

/**
 * A workflow test in seconds: the production workflows (bundled once by test/harness/fast-setup.ts)
 * on the shared dev server, with MOCKED activities — the decision logic alone, no Postgres and no
 * platform. Each call gets its own task queue (and its `-platform` queue, served by the same mocks),
 * so tests in one file never share a worker.
 *
 *   const world = await fastWorld();                  // once per file (afterAll: world.close())
 *   await world.run({ validateWorkflowInput: async (a) => a.input, ... }, async ({ client, taskQueue }) => {
 *     const handle = await client.workflow.start('issueTenantKey', { taskQueue, workflowId, args: [input] });
 *     ...
 *   });
 *
 * Mocks are typed by the real activity signatures; an activity without a mock fails as not registered,
 * so a test names every call the path under test makes.
 */
export type ActivityMocks = Partial<{ [K in keyof Activities]: (...args: Parameters<Activities[K]>) => unknown }>;

export interface FastWorld {
  client: Client;
  run<T>(mocks: ActivityMocks, body: (ctx: { client: Client; taskQueue: string }) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/**
 * A worker waits this long for its activities once the test's body is over. A body that failed while a mock
 * was still blocked (a gate it never opened) left the worker waiting for that activity for ever: the test
 * ended at its timeout, minutes later, without its cause.
 */
const SHUTDOWN_FORCE_TIME = '5s';

/** The body's own failure when a worker also failed to shut down in time (CombinedWorkerRunError). */
function bodyFailureOf(error: unknown): unknown {
  return error instanceof CombinedWorkerRunError ? bodyFailureOf(error.cause.innerError) : error;
}

export async function fastWorld(): Promise<FastWorld> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: quietLogger() });
    runtimeInstalled = true;
  }
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const native = await NativeConnection.connect({ address });
  const client = new Client({ connection, namespace });
  return {
    client,
    async run(mocks, body) {
      const taskQueue = `fast-${randomUUID()}`;
      const { main, platform } = await createFastWorkers(native, taskQueue, mocks);
      try {
        return await main.runUntil(platform.runUntil(body({ client, taskQueue })));
      } catch (error) {
        throw bodyFailureOf(error);
      }
    },
    async close() {
      await connection.close();
      await native.close().catch(() => undefined);
    },
  };
}

/** A workflow id no other test uses. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** The number of events in a run's history (one run: continue-as-new starts a new one). */
export async function historyLength(handle: WorkflowHandle, runId?: string): Promise<number> {
  const history = await handle.client.getHandle(handle.workflowId, runId).fetchHistory();
  return history.events?.length ?? 0;
}

/**
 * The pause before a poll's next look: 50 ms at first (as every poll here looked before), half as long again
 * each time, at most 200 ms. A look is often a query, which costs the server, the test's worker and its client
 * about 6 ms of CPU together (measured on this 2-core machine): a wait of many seconds is looked at five times
 * a second, not twenty.
 */
export function pollPauses(): () => Promise<void> {
  let ms = 50;
  return async () => {
    await new Promise((r) => setTimeout(r, ms));
    ms = Math.min(200, ms * 1.5);
  };
}

/**
 * Polls until `done()` holds. A check that answers at once (a mock's counter, in this process) costs nothing
 * and is looked at every 50 ms; one that answers with a promise (it asks the server) as pollPauses says.
 */
export async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  const pause = pollPauses();
  for (;;) {
    const answer = done();
    if (typeof answer === 'boolean') {
      if (answer) return;
      await new Promise((r) => setTimeout(r, 50));
    } else if (await answer) return;
    else await pause();
  }
}

/** Reads (see pollPauses; a failed read counts as nothing yet) until `done(value)` holds; returns that value. */
export async function untilValue<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const pause = pollPauses();
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined && done(value)) return value;
    await pause();
  }
}

/** The run's current wait (null while it is not waiting or has no handler yet). */
export const waitOf = (handle: WorkflowHandle) => handle.query(currentWaitQuery).catch(() => null);

/** Waits until the run's current wait is at `stage`, and returns it. */
export async function waitForStage(handle: WorkflowHandle, stage: string): Promise<WaitView> {
  let wait: WaitView | null = null;
  await until(async () => (wait = await waitOf(handle))?.stage === stage);
  return wait!;
}

/**
 * The wait's `since` was carried from the run that entered it, not stamped again by the run answering now. Not
 * compared exactly: a run replayed from history (evicted under load) reads workflow time after a local activity
 * from history, which can differ by the activity's milliseconds from the time the live run read (seen: 24 ms).
 */
export async function expectSinceCarried(handle: WorkflowHandle, stage: string, since: string): Promise<void> {
  const now = await waitForStage(handle, stage);
  const { startTime } = await handle.describe();
  expect(Date.parse(now.since)).toBeLessThan(startTime.getTime());
  expect(Math.abs(Date.parse(now.since) - Date.parse(since))).toBeLessThan(1_000);
}

/** Every run of the workflow id stays within `bound` (+20); the first continued as new, and there were 3+ runs. */
export async function expectBounded(
  client: Client,
  handle: WorkflowHandleWithFirstExecutionRunId,
  bound: number,
): Promise<void> {
  const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
  expect(first.status.name).toBe('CONTINUED_AS_NEW');
  let runs = 0;
  for await (const run of client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
    runs += 1;
    expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(bound + 20);
  }
  expect(runs).toBeGreaterThan(2);
}

/**
 * The run a mocked activity is called from: a run continued as new has a new run id under the same workflow id.
 * A test that must see its workflow continue as new waits until the mock was called from that many runs, rather
 * than for a number of polls guessed to be enough (which was several times more than needed: each poll a
 * round trip through a loaded server).
 */
export function callingRun(): string {
  return Context.current().info.workflowExecution?.runId ?? '';
}

/**
 * The runs a bound test waits to have seen polling: the first and two continuations (expectBounded and the
 * like ask for more than two runs).
 */
export const BOUND_TEST_RUNS = 3;

/**
 * A polled mock's pause once it has answered more than `after` times. A test that polls every millisecond to
 * pass its history bound has what it waits for by then, and the run would go on polling that fast (an activity,
 * a timer and a workflow task each time: CPU for the server, the worker and the SDK's core) for as long as the
 * test looks at it and decides: on 2 loaded cores, more than the rest of the test. What the run shows and decides
 * does not depend on how soon the platform answers.
 */
export async function paceAfter(count: number, after: number, ms = 200): Promise<void> {
  if (count > after) await new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `send` (a signal to the run; one at a time) until the run `runId` has continued as new, at most `max`
 * times. Each signal adds events to the run's history; sending all `max` after the continuation only filled the
 * next runs too (a continuation more each, seconds of a loaded server's time).
 */
export async function signalUntilContinued(
  handle: WorkflowHandle,
  runId: string,
  send: () => Promise<unknown>,
  max: number,
): Promise<void> {
  for (let sent = 0; sent < max; sent += 1) {
    if (sent > 0 && sent % 10 === 0 && (await handle.describe()).runId !== runId) return;
    await send();
  }
}

/**
 * Sends an Update as an operator surface does: one that meets the run continuing as new ("aborted by
 * closing workflow") is sent again and lands on the next run (src/client/send-decision.ts does the same).
 * Any other answer, a validator's refusal included, comes back as it is.
 */
export async function decide<Arg, Ret>(
  handle: WorkflowHandle,
  update: UpdateDefinition<Ret, [Arg]>,
  arg: Arg,
): Promise<Ret> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await handle.executeUpdate(update, { args: [arg] });
    } catch (error) {
      const aborted = /aborted by closing workflow/.test((error as Error).message);
      if (!aborted || attempt >= 5) throw error;
    }
  }
}

/**
 * A query's answer from a run that may be in its first workflow task (just continued as new: it checks its
 * input before it installs its handlers, and a query then finds none registered). Asked again until it answers.
 */
export async function answerOf<Ret>(handle: WorkflowHandle, query: QueryDefinition<Ret, []>): Promise<Ret> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await handle.query(query);
    } catch (error) {
      if (attempt >= 50 || (error as Error).name !== 'QueryNotRegisteredError') throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * The activities production composes of others, made of a test's mocks of those when it mocks them and not the
 * composed one (a rotation's verify-and-look: its calls still reach the two mocks, in order; the quiet gate's
 * watch: each of its looks is a call of the observeKeyUsage mock).
 */
function withComposed(mocks: ActivityMocks): ActivityMocks {
  const m = mocks as Partial<Activities>;
  if (!m.observeKeyUsage) return mocks;
  return {
    ...mocks,
    // The quiet gate's watch: its looks are this mock's calls, its retries the real server's.
    ...(m.watchKeyUsage ? {} : { watchKeyUsage: watchThenObserve(m.observeKeyUsage) }),
    ...(m.verifyKeyAndObserveUsage || !m.verifyTenantKey
      ? {}
      : { verifyKeyAndObserveUsage: verifyThenObserve(m.verifyTenantKey, m.observeKeyUsage) }),
  };
}

/**
 * The two workers of a fast test on `taskQueue`: the production workflows (and the mocks) on it, and the mocks
 * on its `-platform` queue. Used by fastWorld's run() and by test/harness/first-task.ts.
 */
export async function createFastWorkers(
  native: NativeConnection,
  taskQueue: string,
  mocks: ActivityMocks,
): Promise<{ main: Worker; platform: Worker }> {
  // Input validation is the real one (pure zod): a test's input is checked as in production.
  const activities = { ...createInputValidationActivities(), ...withComposed(mocks) } as Record<
    string,
    (...args: unknown[]) => unknown
  >;
  const main = await Worker.create({
    connection: native,
    namespace: inject('temporalNamespace'),
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities,
    // Short sticky timeout: a test that ends with a run still cached lets go at once.
    stickyQueueScheduleToStartTimeout: '1s',
    // The workflows run in this process's thread, in the same reusable sandbox the SDK's workflow thread
    // uses (and its replayer uses). A workflow thread is a new V8 isolate that compiles and evaluates the
    // 2.6 MB bundle again for every test's worker: about 400 ms of CPU each (536 against 143 ms measured
    // for a worker's life with one workflow), which the 2-core machine could not spare with test files
    // running side by side. What is given up is the 5 s deadlock detection of a stuck workflow task.
    // (FAST_WORKFLOW_THREADS=1 runs them in a workflow thread again, to find a workflow task that never ends.)
    debugMode: process.env.FAST_WORKFLOW_THREADS !== '1',
    shutdownForceTime: SHUTDOWN_FORCE_TIME,
  });
  const platform = await Worker.create({
    connection: native,
    namespace: inject('temporalNamespace'),
    taskQueue: platformTaskQueue(taskQueue),
    activities,
    shutdownForceTime: SHUTDOWN_FORCE_TIME,
  });
  return { main, platform };
}

/**
 * The quiet gate's watch (QUIET_GATE_WATCH_PATCH) takes `looks` more looks (`looksSoFar`: the observeKeyUsage
 * mock's calls) while the run's history stays as it was: one watchKeyUsage activity pending, its attempts the
 * looks. Call it once the run shows `waiting_for_quiet` with nothing changing in the key records.
 */
export async function expectLooksWithoutEvents(
  handle: WorkflowHandle,
  looksSoFar: () => number,
  looks: number,
): Promise<void> {
  // From a watch that has looked without answering: a run's first watch may answer at its first look (the end of
  // the propagation allowance, quiet-gate.ts watchUntilMs), adding its events after the wait is shown.
  await until(async () => {
    const watching = ((await handle.describe()).raw.pendingActivities ?? []).find(
      (p) => p.activityType?.name === 'watchKeyUsage',
    );
    return (watching?.attempt ?? 0) >= 3;
  });
  const events = await historyLength(handle);
  const from = looksSoFar();
  await until(() => looksSoFar() >= from + looks);
  expect(await historyLength(handle)).toBe(events);
  const pending = (await handle.describe()).raw.pendingActivities ?? [];
  expect(pending.map((p) => p.activityType?.name)).toEqual(['watchKeyUsage']);
  expect(pending[0]!.attempt).toBeGreaterThanOrEqual(looks);
}

/** Waits until the workflow id has had `count` runs (continue-as-new). */
export async function untilRuns(handle: WorkflowHandle, count: number): Promise<void> {
  await until(async () => {
    let runs = 0;
    for await (const _ of handle.client.list({ query: `WorkflowId = '${handle.workflowId}'` })) runs += 1;
    return runs >= count;
  });
}
