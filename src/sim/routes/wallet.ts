import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { getOwnedSubaccount } from '../auth.js';
import { sendData } from '../envelope.js';
import { SimError, SimErrorCode } from '../errors.js';
import { newId } from '../ids.js';
import type { SimRuntime } from '../runtime.js';
import { nextSeq, type TransferRecord } from '../state.js';
import { amountMicroUsd, parseBody, requireTransferKey } from '../validation.js';
import { transferView } from '../views.js';
import { params, parentOf, pathOf } from './common.js';

const RECENT_TRANSFERS = 50;

const transferSchema = z.object({ amountMicroUsd, idempotencyKey: z.string() });

/** The tenant wallet and paid-balance transfers into it. */
export function registerWalletRoutes(app: FastifyInstance, sim: SimRuntime): void {
  app.get('/subaccounts/:subaccountId/wallet', (request, reply) => {
    const parentId = parentOf(sim, request);
    const tenant = getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '');
    const recent = sim.state.transfers
      .filter((t) => t.subaccountId === tenant.id)
      .slice(-RECENT_TRANSFERS)
      .reverse()
      .map(transferView);
    sendData(reply, 200, {
      subaccountId: tenant.id,
      balanceMicroUsd: tenant.balance.toString(),
      currency: 'USD',
      ...(sim.choices.walletShowsTransfers ? { recentTransfers: recent } : {}),
    });
  });

  app.post('/subaccounts/:subaccountId/wallet/transfers', (request, reply) => {
    const parentId = parentOf(sim, request);
    const key = requireTransferKey(request);
    const body = parseBody(transferSchema, request.body);
    const route = 'POST /subaccounts/:subaccountId/wallet/transfers';
    sim.idempotency.run(reply, { parentId, route, key, request: { path: pathOf(request), body } }, () => {
      // Check and commit with no await in between: parallel transfers can never both pass the balance check.
      const tenant = getOwnedSubaccount(sim.state, parentId, params(request).subaccountId ?? '');
      const parent = sim.state.parents.get(parentId);
      const amount = BigInt(body.amountMicroUsd);
      if (!parent || parent.paidBalance < amount) {
        throw new SimError(
          409,
          SimErrorCode.InsufficientBalance,
          "The parent's paid balance is too low for this transfer (promotional balance cannot be transferred).",
        );
      }
      parent.paidBalance -= amount;
      tenant.balance += amount;
      const transfer: TransferRecord = {
        seq: nextSeq(sim.state),
        id: newId('txn_'),
        parentId,
        subaccountId: tenant.id,
        amount,
        idempotencyKey: key,
        createdAt: sim.clock.now(),
      };
      sim.state.transfers.push(transfer);
      return {
        status: sim.choices.createStatus,
        data: { ...transferView(transfer), balanceMicroUsd: tenant.balance.toString() },
      };
    });
  });
}
