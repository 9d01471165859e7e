import { pathSegmentProblem } from '../domain/path-segment.js';
import { PlatformErrorCode, PlatformInputError } from './errors.js';

/**
 * Every path the client calls, relative to the base URL (which ends in /api/v1). Those the contract tables give are
 * fixed by the contract; the rest are our best reading of it and can be overridden per deployment:
 * - `getProject`: the contract implies a project lookup (`project_not_found`) but does not show its path;
 * - `getEnvVars` / `putEnvVars`: environment variables are named, their endpoints are not shown.
 */
export const DEFAULT_PATHS = {
  listSubaccounts: '/subaccounts',
  createSubaccount: '/subaccounts/create',
  getSubaccount: '/subaccounts/:subaccountId',
  suspendSubaccount: '/subaccounts/:subaccountId/suspend',
  resumeSubaccount: '/subaccounts/:subaccountId/resume',
  closeSubaccount: '/subaccounts/:subaccountId/close',
  getWallet: '/subaccounts/:subaccountId/wallet',
  transfer: '/subaccounts/:subaccountId/wallet/transfers',
  listTenantKeys: '/subaccounts/:subaccountId/api-keys',
  createTenantKey: '/subaccounts/:subaccountId/api-keys/create',
  revokeTenantKey: '/subaccounts/:subaccountId/api-keys/:keyId/revoke',
  listPlatformKeys: '/platform/api-keys',
  createPlatformKey: '/platform/api-keys/create',
  revokePlatformKey: '/platform/api-keys/:keyId/revoke',
  listProjects: '/projects',
  createProject: '/projects/create',
  getProject: '/projects/:projectId',
  deleteProject: '/projects/:projectId/delete',
  getEnvVars: '/projects/:projectId/env-vars',
  putEnvVars: '/projects/:projectId/env-vars/update',
  createWebhook: '/projects/:projectId/registry/webhooks/create',
  listWebhooks: '/projects/:projectId/registry/webhooks',
  updateWebhook: '/projects/:projectId/registry/webhooks/:webhookId/update',
  deleteWebhook: '/projects/:projectId/registry/webhooks/:webhookId/delete',
  listWebhookDeliveries: '/projects/:projectId/registry/webhooks/:webhookId/deliveries',
} as const;
export type PathName = keyof typeof DEFAULT_PATHS;
export type PathOverrides = Partial<Record<PathName, string>>;

/**
 * Fills `:name` placeholders with URL-encoded values; ids are opaque and never parsed or reshaped, but a value that is
 * no id (`.`, `..`, a separator, a `%`) is refused before any request: encoded or not, it could name another path.
 */
export function fillPath(template: string, params: Record<string, string>): string {
  return template.replace(/:([A-Za-z][A-Za-z0-9]*)/g, (_match, name: string) => {
    const value = params[name];
    if (value === undefined) {
      throw new PlatformInputError({
        code: PlatformErrorCode.INVALID_INPUT,
        message: `path ${template} needs a value for :${name}`,
      });
    }
    const problem = pathSegmentProblem(value);
    if (problem !== undefined) {
      throw new PlatformInputError({
        code: PlatformErrorCode.INVALID_INPUT,
        message: `path ${template}: :${name} ${problem}`,
      });
    }
    return encodeURIComponent(value);
  });
}
