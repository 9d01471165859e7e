import { parentAuthHeaders } from './auth.js';
import { callOf } from './call-options.js';
import { request, type ClientContext } from './core.js';
import { PlatformIdempotencyConflictError } from './errors.js';
import { fillPath } from './paths.js';
import { parseTransfer, parseWallet } from './parse-control.js';
import type { PlatformClient } from './types.js';
import { assertAmountMicroUsd, assertId, assertIdempotencyKey } from './validate.js';

export function walletMethods(ctx: ClientContext): Pick<PlatformClient, 'getWallet' | 'transfer'> {
  return {
    async getWallet(input) {
      const operation = 'getWallet';
      const subaccountId = assertId(input.subaccountId, 'subaccountId', operation);
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'GET',
          params: { subaccountId },
          headers: parentAuthHeaders(ctx.credentials, operation),
          replaySafe: false,
          call: callOf(input),
        },
        parseWallet,
      );
      return { requestId, wallet: value };
    },

    async transfer(input) {
      const operation = 'transfer';
      const subaccountId = assertId(input.subaccountId, 'subaccountId', operation);
      const amountMicroUsd = assertAmountMicroUsd(input.amountMicroUsd, operation);
      const idempotencyKey = assertIdempotencyKey(input.idempotencyKey, operation);
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'POST',
          params: { subaccountId },
          headers: parentAuthHeaders(ctx.credentials, operation),
          // The contract wants the key twice: the header and the body field must carry the same value.
          body: { amountMicroUsd, idempotencyKey },
          idempotencyKey,
          replaySafe: true,
          call: callOf(input),
        },
        parseTransfer,
      );
      if (value.amountMicroUsd !== undefined && value.amountMicroUsd !== amountMicroUsd) {
        // A replay answered with a different transfer: this key was used for another operation. Reconcile.
        throw new PlatformIdempotencyConflictError({
          message:
            `${operation}: the platform answered idempotency key ${idempotencyKey} with a ` +
            `transfer of ${value.amountMicroUsd}, not ${amountMicroUsd}`,
          requestId,
          method: 'POST',
          path: fillPath(ctx.paths.transfer, { subaccountId }),
          details: value.id ? { transferId: value.id } : undefined,
        });
      }
      // A 2xx means the platform accepted exactly this request; fill what it did not echo from what we sent.
      return {
        requestId,
        transfer: {
          ...value,
          subaccountId: value.subaccountId ?? subaccountId,
          amountMicroUsd: value.amountMicroUsd ?? amountMicroUsd,
          idempotencyKey: value.idempotencyKey ?? idempotencyKey,
        },
      };
    },
  };
}
