import { resourceAuthHeaders } from './auth.js';
import { callOf } from './call-options.js';
import { listAll, request, type ClientContext } from './core.js';
import { isObject } from './envelope.js';
import { PlatformError, PlatformErrorCode, PlatformInputError } from './errors.js';
import { asText, pick } from './normalize.js';
import { parseEnvVars, parseProject } from './parse-resources.js';
import type { EnvVars } from './records.js';
import type { PlatformClient, ProjectRefInput } from './types.js';
import { assertId, assertNonEmpty } from './validate.js';

type ProjectMethods = Pick<
  PlatformClient,
  'listProjects' | 'createProject' | 'getProject' | 'deleteProject' | 'getEnvVars' | 'putEnvVars'
>;

export type DeleteMethod = 'DELETE' | 'POST';

export interface ProjectOptions {
  /** The delete verb is "as the action dictates" (not shown). A 405 answer switches to the other verb once. */
  projectDeleteMethod: DeleteMethod;
  /** The env-var update body is not shown; the default sends `{ variables: [{ key, value }] }`. */
  envVarsBody: (vars: EnvVars) => unknown;
}

export function defaultEnvVarsBody(vars: EnvVars): unknown {
  return { variables: Object.entries(vars).map(([key, value]) => ({ key, value })) };
}

const ENV_RESPONSE_KEYS = ['vars', 'envVars', 'env_vars', 'variables', 'env'] as const;

export function projectMethods(ctx: ClientContext, options: ProjectOptions): ProjectMethods {
  const projectRef = (operation: string, input: ProjectRefInput) => ({
    headers: resourceAuthHeaders(input.auth, ctx.credentials, operation),
    params: { projectId: assertId(input.projectId, 'projectId', operation) },
    call: callOf(input),
  });

  async function deleteWith(method: DeleteMethod, input: ProjectRefInput) {
    return request(
      ctx,
      { operation: 'deleteProject', method, replaySafe: true, ...projectRef('deleteProject', input) },
      () => undefined,
    );
  }

  return {
    async listProjects(input) {
      const operation = 'listProjects';
      const outcome = await listAll(
        ctx,
        {
          operation,
          method: 'GET',
          headers: resourceAuthHeaders(input.auth, ctx.credentials, operation),
          replaySafe: false,
          call: callOf(input),
        },
        { resourceKeys: ['projects'], idOf: (item) => asText(pick(item, ['id', 'projectId'])), parse: parseProject },
      );
      return { requestId: outcome.requestId, requestIds: outcome.requestIds, projects: outcome.items };
    },

    async createProject(input) {
      const operation = 'createProject';
      const { requestId, value } = await request(
        ctx,
        {
          operation,
          method: 'POST',
          headers: resourceAuthHeaders(input.auth, ctx.credentials, operation),
          body: {
            name: assertNonEmpty(input.name, 'name', operation),
            region: assertNonEmpty(input.region, 'region', operation),
          },
          replaySafe: false,
          call: callOf(input),
        },
        parseProject,
      );
      return { requestId, project: value };
    },

    async getProject(input) {
      const { requestId, value } = await request(
        ctx,
        { operation: 'getProject', method: 'GET', replaySafe: false, ...projectRef('getProject', input) },
        parseProject,
      );
      return { requestId, project: value };
    },

    async deleteProject(input) {
      try {
        const { requestId } = await deleteWith(options.projectDeleteMethod, input);
        return { requestId };
      } catch (err) {
        // 405 means the route exists but wants the other verb, and nothing was done: safe to switch once.
        if (!(err instanceof PlatformError) || err.status !== 405) throw err;
        const { requestId } = await deleteWith(options.projectDeleteMethod === 'DELETE' ? 'POST' : 'DELETE', input);
        return { requestId };
      }
    },

    async getEnvVars(input) {
      const { requestId, value } = await request(
        ctx,
        { operation: 'getEnvVars', method: 'GET', replaySafe: false, ...projectRef('getEnvVars', input) },
        parseEnvVars,
      );
      return { requestId, vars: value };
    },

    async putEnvVars(input) {
      const operation = 'putEnvVars';
      const vars = { ...input.vars };
      for (const [name, value] of Object.entries(vars)) {
        if (name.length === 0 || typeof value !== 'string') {
          throw new PlatformInputError({
            code: PlatformErrorCode.INVALID_INPUT,
            message: `${operation}: vars must map non-empty names to string values (check ${JSON.stringify(name)})`,
          });
        }
      }
      const { requestId, value } = await request(
        ctx,
        // Wholesale replace with the same body is idempotent: repeating it after a lost answer is safe.
        {
          operation,
          method: 'PUT',
          body: options.envVarsBody(vars),
          replaySafe: true,
          ...projectRef(operation, input),
        },
        (payload, parseCtx) =>
          // Only trust an echo we recognise; otherwise the 2xx means "now exactly what we sent".
          Array.isArray(payload) || (isObject(payload) && pick(payload, ENV_RESPONSE_KEYS) !== undefined)
            ? parseEnvVars(payload, parseCtx)
            : vars,
      );
      return { requestId, vars: value };
    },
  };
}
