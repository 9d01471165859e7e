import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FLEET_QUIET_RELEASE_PATCH } from '../../workflows/keys/key-slot-run.js';

/**
 * The histories in test/histories/branches/ (scripts/record-branch-histories.ts) are there for one branch each:
 * a recording that misses it would still replay, so the branch would go unchecked. This proves each took it.
 */
const dir = new URL('../histories/branches/', import.meta.url);
const recorded = JSON.parse(readFileSync(new URL('index.json', dir), 'utf8')) as Record<string, string>;

interface Payloads {
  payloads?: Array<{ data?: string }>;
}
interface Event {
  eventType: string;
  markerRecordedEventAttributes?: { markerName?: string; details?: Record<string, Payloads> };
  signalExternalWorkflowExecutionInitiatedEventAttributes?: {
    signalName?: string;
    workflowExecution?: { workflowId?: string };
    input?: Payloads;
  };
  workflowExecutionSignaledEventAttributes?: {
    signalName?: string;
    input?: Payloads;
    externalWorkflowExecution?: { workflowId?: string };
  };
  workflowExecutionStartedEventAttributes?: {
    workflowType?: { name?: string };
    parentWorkflowExecution?: { workflowId?: string };
  };
}

function eventsOf(name: string): Event[] {
  return (JSON.parse(readFileSync(new URL(`${name}.json`, dir), 'utf8')) as { events: Event[] }).events;
}

/** The first payload, decoded (the recordings are unencrypted JSON). */
function decoded(payloads: Payloads | undefined): unknown {
  const data = payloads?.payloads?.[0]?.data;
  return data === undefined ? undefined : JSON.parse(Buffer.from(data, 'base64').toString('utf8'));
}

function patchIds(events: Event[]): unknown[] {
  return events
    .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
    .map((e) => (decoded(e.markerRecordedEventAttributes?.details?.['patch-data']) as { id?: string })?.id);
}

describe('the fleet quiet-gate branch histories', () => {
  const fleetId = recorded['rotateFleet-quietGate']!;
  const childId = recorded['rotateTenantKey-fleetQuietGate']!;
  const child = eventsOf('rotateTenantKey-fleetQuietGate');
  const fleet = eventsOf('rotateFleet-quietGate');

  it('are a rotateFleet run and its child rotateTenantKey run', () => {
    expect(fleet[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('rotateFleet');
    const started = child[0]?.workflowExecutionStartedEventAttributes;
    expect(started?.workflowType?.name).toBe('rotateTenantKey');
    expect(started?.parentWorkflowExecution?.workflowId).toBe(fleetId);
  });

  it("hold the child's patch marker and its waiting_for_quiet tell to the fleet", () => {
    expect(FLEET_QUIET_RELEASE_PATCH).toBe('fleet-releases-quiet-waits');
    expect(patchIds(child)).toContain('fleet-releases-quiet-waits');
    const tells = child
      .map((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes)
      .filter((a) => a?.signalName === 'rotationSettled' && a.workflowExecution?.workflowId === fleetId)
      .map((a) => decoded(a?.input));
    expect(tells).toContainEqual({ workflowId: childId, outcome: 'waiting_for_quiet' });
    expect(tells).toContainEqual({ workflowId: childId, outcome: 'completed', settles: true });
  });

  it("hold the fleet's patch marker and the tells it received", () => {
    expect(patchIds(fleet)).toContain('fleet-releases-quiet-waits');
    const received = fleet
      .map((e) => e.workflowExecutionSignaledEventAttributes)
      .filter((a) => a?.signalName === 'rotationSettled' && a.externalWorkflowExecution?.workflowId === childId)
      .map((a) => decoded(a?.input));
    expect(received).toContainEqual({ workflowId: childId, outcome: 'waiting_for_quiet' });
    expect(received).toContainEqual({ workflowId: childId, outcome: 'completed', settles: true });
  });
});
