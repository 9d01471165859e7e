import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { decideApproval, listApprovalViews } from '../../client/approvals/approvals.js';
import { DecisionRefusedError } from '../../client/send-decision.js';
import type { Pool } from '../../client/records.js';
import { GatewayError, GatewayErrorCode, sendData } from '../http/errors.js';
import { callerOf } from '../http/access.js';
import { anyArray, anyObject, doc, objectOf, reasonField } from '../http/api-docs.js';

/**
 * The four-eyes queue over HTTP, for operators only (an OPERATORS token; a signup backend's token is
 * 403): `GET /v1/approvals`, `POST /v1/approvals/:id/approve|reject` with `{ "reason": "..." }`.
 * Who decides is the bearer's operator.
 */
export async function approvalRoutes(api: FastifyInstance, deps: { pool: Pool; client: Client }): Promise<void> {
  api.get('', { config: { permission: 'approvals.read' }, schema: listApprovalsDoc }, async (request, reply) => {
    const { all } = request.query as { all?: string };
    return sendData(reply, 200, await listApprovalViews(deps.pool, { all: all === 'true' }));
  });
  api.post(
    '/:id/:decision',
    { config: { permission: 'approvals.decide' }, schema: decideApprovalDoc },
    async (request, reply) => {
      const operator = callerOf(request).name;
      const { id, decision } = request.params as { id: string; decision: string };
      if (decision !== 'approve' && decision !== 'reject')
        throw new GatewayError(404, GatewayErrorCode.ROUTE_NOT_FOUND, 'No such decision; use approve or reject.');
      const body = (request.body ?? {}) as Record<string, unknown>;
      const unknown = Object.keys(body).filter((key) => key !== 'reason');
      if (unknown.length)
        throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, `${unknown[0]}: is not a known field`, {
          fields: unknown,
        });
      try {
        const { approval, answer } = await decideApproval(deps, id, decision, {
          operator,
          reason: body.reason as string,
        });
        const workflowId = approval.params['workflowId'];
        return sendData(reply, 200, {
          id,
          state: approval.state,
          decidedBy: operator,
          ...(typeof workflowId === 'string' ? { workflowId } : {}),
          ...(answer ? { answer } : {}),
        });
      } catch (error) {
        // Approved and used up, but the run no longer takes the verdict: not the run's refusal (409 of its own).
        if (error instanceof DecisionRefusedError)
          throw new GatewayError(409, GatewayErrorCode.APPROVAL_NOT_PENDING, `approved, but ${error.message}.`);
        throw error;
      }
    },
  );
}

const listApprovalsDoc = doc({
  summary: 'Four-eyes requests awaiting a second operator (`all=true`: decided and expired ones too)',
  query: { all: { type: 'string', enum: ['true', 'false'] } },
  answers: { 200: { description: 'The requests.', data: anyArray } },
});

const decideApprovalDoc = doc({
  summary: 'Approve or reject a request another operator asked for (an approved resolveTransfer is sent)',
  params: { id: { type: 'string' }, decision: { type: 'string', enum: ['approve', 'reject'] } },
  body: { ...objectOf({ reason: reasonField }), additionalProperties: false },
  answers: {
    200: { description: 'Decided.', data: anyObject },
    403: 'The requester itself (SELF_APPROVAL), or a role without the permission (FORBIDDEN).',
    404: 'No such request (APPROVAL_NOT_FOUND) or decision (ROUTE_NOT_FOUND).',
    409: 'Already decided or expired (APPROVAL_NOT_PENDING, APPROVAL_EXPIRED).',
  },
});
