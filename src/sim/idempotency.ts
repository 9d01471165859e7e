import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { SimChoices } from './choices.js';
import type { SimClock } from './clock.js';
import { sendData } from './envelope.js';
import { SimError, SimErrorCode } from './errors.js';

interface IdempotencyEntry {
  fingerprint: string;
  status: number;
  data: unknown;
  requestId: string;
  expiresAt: number;
  /** Set when the recorded outcome was a refusal (choice `recordRefusals`). */
  refusal?: { code: string; message: string } | undefined;
}

export interface IdempotentCall {
  parentId: string;
  /** Route template, e.g. `POST /subaccounts/:subaccountId/wallet/transfers`. */
  route: string;
  key: string;
  /** Everything that makes two requests "the same": the concrete path and the body. */
  request: unknown;
}

export interface Outcome {
  status: number;
  data: unknown;
}

/**
 * Idempotency records per parent + route + key: a fingerprint of the request and the original success, kept for
 * the retention (sim clock). Only successes are recorded: a refused request (e.g. INSUFFICIENT_BALANCE) leaves the
 * key free, so a retry with the same key after funding the parent can succeed.
 */
export class IdempotencyStore {
  readonly #entries = new Map<string, IdempotencyEntry>();

  constructor(
    private readonly clock: SimClock,
    private readonly retentionSeconds: number,
    private readonly choices: SimChoices,
  ) {}

  clear(): void {
    this.#entries.clear();
  }

  /**
   * Runs `action` at most once per key. Lookup, action and record happen in one synchronous stretch (no await),
   * so parallel retries cannot both act: the first records, the rest replay.
   */
  run(reply: FastifyReply, call: IdempotentCall, action: () => Outcome): void {
    const now = this.clock.now();
    const slot = JSON.stringify([call.parentId, call.route, call.key]);
    const fingerprint = fingerprintOf(call.request);
    let entry = this.#entries.get(slot);
    if (entry && entry.expiresAt <= now) {
      this.#entries.delete(slot);
      entry = undefined;
    }
    if (entry) {
      if (entry.fingerprint !== fingerprint) {
        throw new SimError(
          this.choices.keyReuseStatus,
          SimErrorCode.IdempotencyKeyReused,
          'This Idempotency-Key was already used for a different request; use a new key for a new operation.',
        );
      }
      if (this.choices.replay === 'conflict') {
        throw new SimError(
          409,
          SimErrorCode.IdempotencyKeyInUse,
          'This Idempotency-Key was already used for this request; read the resource to learn the outcome.',
        );
      }
      if (entry.refusal) throw new SimError(entry.status, entry.refusal.code, entry.refusal.message);
      sendData(reply, entry.status, entry.data, {
        headers: { 'Idempotent-Replayed': 'true' },
        meta: { originalRequestId: entry.requestId },
      });
      return;
    }
    const record = (status: number, data: unknown, refusal?: IdempotencyEntry['refusal']) =>
      this.#entries.set(slot, {
        fingerprint,
        status,
        data,
        refusal,
        requestId: reply.request.id,
        expiresAt: now + this.retentionSeconds * 1000,
      });
    let outcome: Outcome;
    try {
      outcome = action();
    } catch (error) {
      // A platform that keeps refusals under the key answers every retry of a refused request the same way.
      if (this.choices.recordRefusals && error instanceof SimError && error.status >= 400 && error.status < 500) {
        record(error.status, undefined, { code: error.code, message: error.message });
      }
      throw error;
    }
    if (outcome.status >= 200 && outcome.status < 300) record(outcome.status, outcome.data);
    sendData(reply, outcome.status, outcome.data);
  }

  /** Runs the action with or without idempotency, for lifecycle actions where the key is optional. */
  runMaybe(
    reply: FastifyReply,
    call: Omit<IdempotentCall, 'key'> & { key: string | undefined },
    action: () => Outcome,
  ): void {
    if (call.key === undefined) {
      const outcome = action();
      sendData(reply, outcome.status, outcome.data);
      return;
    }
    this.run(reply, { ...call, key: call.key }, action);
  }
}

function fingerprintOf(value: unknown): string {
  return createHash('sha256').update(stableStringify(value)).digest('hex');
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
