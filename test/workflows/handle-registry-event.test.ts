import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessRegistryDeliveryResult } from '../../activities/registry.js';
import { registryDeliveryWorkflowId } from '../../src/domain/ids.js';
import { fastWorld, uniqueId, type FastWorld } from '../harness/fast-workflow.js';

/**
 * handleRegistryEvent with a mocked processRegistryDelivery: one call per delivery with its id, the activity's
 * routing answered back as it came (a known image.* event, an unknown event name, a redelivery already
 * processed), and a refused input (no id, too long an id, another workflow id) that calls nothing.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

describe('handleRegistryEvent (mocked activities)', () => {
  it('processes each delivery once under its id and answers the route the activity chose', async () => {
    const known = uniqueId('d');
    const unknown = uniqueId('d');
    const again = uniqueId('d');
    const answers: Record<string, ProcessRegistryDeliveryResult> = {
      [known]: { deliveryId: known, event: 'image.pushed', route: 'image', externalRef: 't-1', processedNow: true },
      [unknown]: {
        deliveryId: unknown,
        event: 'chart.pushed',
        route: 'unknown',
        externalRef: null,
        processedNow: true,
      },
      [again]: { deliveryId: again, event: 'image.deleted', route: 'image', externalRef: 't-2', processedNow: false },
    };
    const calls: string[] = [];
    await world.run(
      {
        processRegistryDelivery: async (input) => {
          calls.push(input.deliveryId);
          return answers[input.deliveryId]!;
        },
      },
      async ({ client, taskQueue }) => {
        for (const deliveryId of [known, unknown, again]) {
          const result = await client.workflow.execute('handleRegistryEvent', {
            taskQueue,
            workflowId: registryDeliveryWorkflowId(deliveryId),
            args: [{ deliveryId }],
          });
          expect(result).toEqual(answers[deliveryId]);
        }
      },
    );
    expect(calls).toEqual([known, unknown, again]);
  }, 30_000);

  it('refuses a missing or too long delivery id, or another workflow id, before processing anything', async () => {
    let called = 0;
    await world.run(
      {
        processRegistryDelivery: async (input) => {
          called += 1;
          return { deliveryId: input.deliveryId, event: 'x', route: 'unknown', externalRef: null, processedNow: true };
        },
      },
      async ({ client, taskQueue }) => {
        const long = 'd'.repeat(201);
        const cases: Array<{ workflowId: string; input: unknown }> = [
          { workflowId: uniqueId('registry-delivery:'), input: {} },
          { workflowId: registryDeliveryWorkflowId(long), input: { deliveryId: long } },
          { workflowId: registryDeliveryWorkflowId(uniqueId('other')), input: { deliveryId: uniqueId('d') } },
        ];
        for (const { workflowId, input } of cases) {
          const handle = await client.workflow.start('handleRegistryEvent', { taskQueue, workflowId, args: [input] });
          await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
        }
      },
    );
    expect(called).toBe(0);
  }, 30_000);
});
