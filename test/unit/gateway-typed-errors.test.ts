import { describe, expect, it } from 'vitest';
import { DecisionRefusedError } from '../../src/client/send-decision.js';
import { DuplicateSubscriptionError, SubscriptionNotFoundError } from '../../src/client/events/events.js';
import { ImportInputError } from '../../src/client/imports/import-map.js';
import { TenantNotFoundError } from '../../src/domain/record-errors.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { GatewayError, typedErrorAnswer } from '../../src/gateway/http/errors.js';

/**
 * The gateway's one mapping of the layers' typed errors (issue 46): routes throw what their client call threw and
 * the error handler answers it. An error that extends another is answered as itself, not as its parent.
 */
describe('typedErrorAnswer', () => {
  const answered = (error: unknown) => {
    const answer = typedErrorAnswer(error);
    return answer && { status: answer.status, code: answer.code, fields: answer.extra.fields };
  };

  it('answers each typed error one way, a subclass as itself', () => {
    expect(answered(new InvalidInputError(['reason: is required']))).toEqual({
      status: 400,
      code: 'INVALID_INPUT',
      fields: ['reason'],
    });
    // A duplicate subscription is an InvalidInputError too, but a 409 of its own.
    expect(answered(new DuplicateSubscriptionError('sub_1'))).toEqual({
      status: 409,
      code: 'SUBSCRIPTION_DUPLICATE',
      fields: ['url'],
    });
    expect(answered(new ImportInputError(['map: line 2: bad ref']))).toMatchObject({ status: 400, fields: ['map'] });
    expect(answered(new SubscriptionNotFoundError('sub_1'))).toMatchObject({ status: 404 });
    expect(answered(new TenantNotFoundError('acme'))).toMatchObject({ status: 404, code: 'TENANT_NOT_FOUND' });
    // The ref named, in the words tenantctl's users already match on.
    expect(typedErrorAnswer(new TenantNotFoundError('acme'))?.message).toBe('No tenant with this external ref (acme).');
    expect(answered(new DecisionRefusedError('x refused y', 'DECISION_NOT_APPLICABLE'))).toMatchObject({
      status: 409,
      code: 'DECISION_NOT_APPLICABLE',
    });
    expect(answered(new DecisionRefusedError('no running workflow', 'WORKFLOW_NOT_FOUND'))).toMatchObject({
      status: 404,
      code: 'RUN_NOT_FOUND',
    });
  });

  it('leaves the gateway’s own errors and unknown errors to the handler (a 500 with no detail)', () => {
    expect(typedErrorAnswer(new GatewayError(418, 'INVALID_INPUT', 'x'))).toBeUndefined();
    expect(typedErrorAnswer(new TypeError('boom'))).toBeUndefined();
  });
});
