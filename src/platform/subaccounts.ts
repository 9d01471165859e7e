import { parentAuthHeaders } from './auth.js';
import { callOf } from './call-options.js';
import { listAll, listPage, request, type ClientContext } from './core.js';
import { isObject } from './envelope.js';
import { asText, pick } from './normalize.js';
import { parseSubaccount, SUBACCOUNT_ID_KEYS } from './parse-control.js';
import type { PathName } from './paths.js';
import { rawStatusOf, tenantStatus } from './status.js';
import type { LifecycleInput, LifecycleResult, PlatformClient } from './types.js';
import { assertId, assertIdempotencyKey, assertNonEmpty } from './validate.js';

type SubaccountMethods = Pick<
  PlatformClient,
  | 'listSubaccounts'
  | 'listSubaccountsPage'
  | 'createSubaccount'
  | 'getSubaccount'
  | 'suspendSubaccount'
  | 'resumeSubaccount'
  | 'closeSubaccount'
>;

export function subaccountMethods(ctx: ClientContext): SubaccountMethods {
  const parent = (operation: string) => parentAuthHeaders(ctx.credentials, operation);

  async function lifecycle(
    operation: Extract<PathName, 'suspendSubaccount' | 'resumeSubaccount' | 'closeSubaccount'>,
    input: LifecycleInput,
  ): Promise<LifecycleResult> {
    const subaccountId = assertId(input.subaccountId, 'subaccountId', operation);
    const idempotencyKey =
      input.idempotencyKey === undefined ? undefined : assertIdempotencyKey(input.idempotencyKey, operation);
    const { requestId, value } = await request(
      ctx,
      {
        operation,
        method: 'POST',
        params: { subaccountId },
        headers: parent(operation),
        idempotencyKey,
        // Repeating suspend/resume/close cannot create anything twice; at worst it is refused as already done.
        replaySafe: true,
        call: callOf(input),
      },
      (payload, parseCtx) => {
        const inner = isObject(payload) ? (pick(payload, ['subaccount', 'tenant']) ?? payload) : undefined;
        const subaccount =
          isObject(inner) && asText(pick(inner, SUBACCOUNT_ID_KEYS)) !== undefined
            ? parseSubaccount(inner, parseCtx)
            : undefined;
        const rawStatus = subaccount?.rawStatus ?? (isObject(inner) ? rawStatusOf(inner) : undefined);
        return { subaccount, rawStatus, status: tenantStatus(rawStatus) };
      },
    );
    return { requestId, ...value };
  }

  const SUBACCOUNT_LIST = {
    resourceKeys: ['subaccounts', 'tenants'],
    idOf: (item: Record<string, unknown>) => asText(pick(item, SUBACCOUNT_ID_KEYS)),
    parse: parseSubaccount,
  } as const;

  return {
    async listSubaccounts(input) {
      const operation = 'listSubaccounts';
      const outcome = await listAll(
        ctx,
        { operation, method: 'GET', headers: parent(operation), replaySafe: false, call: callOf(input) },
        SUBACCOUNT_LIST,
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, subaccounts: outcome.items };
    },

    async listSubaccountsPage(input) {
      const operation = 'listSubaccounts';
      const { items, next, requestId } = await listPage(
        ctx,
        { operation, method: 'GET', headers: parent(operation), replaySafe: false, call: callOf(input) },
        SUBACCOUNT_LIST,
        input.page,
      );
      return { requestId, subaccounts: items, next };
    },

    async createSubaccount(input) {
      const operation = 'createSubaccount';
      const idempotencyKey = assertIdempotencyKey(input.idempotencyKey, operation);
      const body = {
        name: assertNonEmpty(input.name, 'name', operation),
        externalRef: assertNonEmpty(input.externalRef, 'externalRef', operation),
      };
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'POST',
          headers: parent(operation),
          body,
          idempotencyKey,
          replaySafe: true,
          call: callOf(input),
        },
        parseSubaccount,
      );
      return { requestId, subaccount: value };
    },

    async getSubaccount(input) {
      const operation = 'getSubaccount';
      const subaccountId = assertId(input.subaccountId, 'subaccountId', operation);
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'GET',
          params: { subaccountId },
          headers: parent(operation),
          replaySafe: false,
          call: callOf(input),
        },
        parseSubaccount,
      );
      return { requestId, subaccount: value };
    },

    suspendSubaccount: (input) => lifecycle('suspendSubaccount', input),
    resumeSubaccount: (input) => lifecycle('resumeSubaccount', input),
    closeSubaccount: (input) => lifecycle('closeSubaccount', input),
  };
}
