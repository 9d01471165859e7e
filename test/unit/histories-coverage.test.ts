import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKFLOW_TYPES } from '../../src/main/wiring/workflow-types.js';

/**
 * Every workflow the worker registers (every export of workflows/index.ts) has a recorded history in test/histories,
 * which test/integration/replay.test.ts replays against the current code: a workflow added without one fails here.
 * Record it with `npm run histories:record -- <type>` after adding its scenario to scripts/record-histories.ts.
 */
const dir = new URL('../histories/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

function startedType(file: URL): string | undefined {
  const history = JSON.parse(readFileSync(file, 'utf8')) as {
    events?: Array<{ workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }>;
  };
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
}

describe('recorded histories', () => {
  it('name every workflow type the worker registers, and no other', () => {
    expect(Object.keys(recorded).sort()).toEqual([...WORKFLOW_TYPES]);
  });

  it.each([...WORKFLOW_TYPES])('hold a run of %s, with the workflow id it ran under', (type) => {
    const file = new URL(`${type}.json`, dir);
    expect(existsSync(file), `test/histories/${type}.json`).toBe(true);
    expect(startedType(file)).toBe(type);
    expect(recorded[type]).toEqual(expect.any(String));
  });
});
