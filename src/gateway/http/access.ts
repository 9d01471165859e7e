import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Identity, OperatorDirectory } from '../../secrets/operators.js';
import { roleAllows, type Permission } from '../../domain/roles.js';
import { bearerTokenOf, unauthorized, type TokenSet } from './auth.js';
import { GatewayError, GatewayErrorCode } from './errors.js';

/**
 * Who may do what, decided here for every route (src/domain/roles.ts holds the table):
 * - every route declares `config: { permission }` — a permission of the roles table, or `public` for the
 *   routes that are open or carry their own proof (health, metrics, the OpenAPI document, the platform's
 *   signed webhooks, the codec with its own tokens). A route that declares nothing cannot be registered.
 * - a caller is an identity: an OPERATORS entry (name, role, token hash) or, for the tokens of
 *   GATEWAY_API_TOKENS, the signup backend (`signup-backend`, role `backend`). Unknown, missing and
 *   malformed tokens get the same 401; a known caller whose role lacks the permission gets 403.
 * - the audited actor is always the authenticated name (`actorOf`), never a body field or a flag.
 */
declare module 'fastify' {
  interface FastifyContextConfig {
    permission?: Permission | 'public' | PermissionByRequest;
  }
}

export const PUBLIC = 'public' as const;

/**
 * The permission of a route whose path names what it acts on (the one decision route names a run): read from the
 * request once the caller is authenticated, from a table declared with the route. `cases` lists each case with an
 * example of the path parameter that selects it, so the route table tests and the API document can walk them.
 */
export interface PermissionByRequest {
  /** What the permission depends on, in the words of the API document ("the run's kind"). */
  readonly dependsOn: string;
  readonly cases: ReadonlyArray<{ readonly name: string; readonly example: string; readonly permission: Permission }>;
  /** The permission this request needs; throws a GatewayError (after authentication) when it names nothing. */
  readonly resolve: (request: FastifyRequest) => Permission;
}

/** The identity of GATEWAY_API_TOKENS' bearers: they are not told apart from each other. */
const SIGNUP_BACKEND: Identity = { name: 'signup-backend', role: 'backend' };

export interface DeclaredRoute {
  method: string;
  url: string;
  permission: Permission | typeof PUBLIC | PermissionByRequest;
}

const identityOfRequest = new WeakMap<FastifyRequest, Identity>();

/**
 * Installs the registration check and the authentication hook on the root app, before any route is
 * registered; returns the declared routes as they are registered (the route table tests walk it).
 */
export function installAccessControl(
  app: FastifyInstance,
  deps: { backendTokens: TokenSet; identities: OperatorDirectory },
): DeclaredRoute[] {
  const routes: DeclaredRoute[] = [];
  app.addHook('onRoute', (route) => {
    const permission = route.config?.permission;
    if (permission === undefined)
      throw new Error(`${String(route.method)} ${route.url}: declares no permission (config.permission)`);
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, permission });
  });
  app.addHook('onRequest', async (request) => {
    const declared = request.routeOptions.config.permission;
    // Not-found answers have no permission: they say nothing about any route.
    if (declared === undefined || declared === PUBLIC) return;
    const identity = identify(deps, request);
    const permission = typeof declared === 'string' ? declared : declared.resolve(request);
    if (!roleAllows(identity.role, permission)) throw forbidden(identity, permission);
    identityOfRequest.set(request, identity);
  });
  return routes;
}

function identify(deps: { backendTokens: TokenSet; identities: OperatorDirectory }, request: FastifyRequest) {
  const token = bearerTokenOf(request.headers.authorization);
  if (token === undefined) throw unauthorized();
  // Both are checked every time: the time taken does not say which kind of token it was.
  const asBackend = deps.backendTokens.matches(token);
  const identity = deps.identities.identify(token);
  if (identity) return identity;
  if (asBackend) return SIGNUP_BACKEND;
  throw unauthorized();
}

function forbidden(identity: Identity, permission: Permission): GatewayError {
  return new GatewayError(
    403,
    GatewayErrorCode.FORBIDDEN,
    `This needs the ${permission} permission, which the ${identity.role} role of ${identity.name} does not have.`,
  );
}

/** The authenticated caller of a route that declared a permission. */
export function callerOf(request: FastifyRequest): Identity {
  const identity = identityOfRequest.get(request);
  if (!identity) throw new Error(`${request.method} ${request.url}: no authenticated caller (a public route?)`);
  return identity;
}

/** Refuses unless the caller also holds `permission` (a field that asks for more, such as `force`). */
export function requirePermission(request: FastifyRequest, permission: Permission): Identity {
  const identity = callerOf(request);
  if (!roleAllows(identity.role, permission)) throw forbidden(identity, permission);
  return identity;
}

/**
 * Who an action is recorded under: the caller's name. A body field that names someone (`field`) may
 * be left out or repeat that name; naming anyone else is refused, never recorded.
 */
export function actorOf(request: FastifyRequest, typed: unknown, field: string): string {
  const { name } = callerOf(request);
  if (typed !== undefined && typed !== name)
    throw new GatewayError(
      400,
      GatewayErrorCode.INVALID_INPUT,
      `${field}: is taken from the bearer token (it authenticates ${name}); leave it out`,
      { fields: [field] },
    );
  return name;
}

/** Whose resources the caller may see and change: its own, or everyone's (`resources.any`). */
export function ownerScopeOf(request: FastifyRequest): string | undefined {
  const identity = callerOf(request);
  return roleAllows(identity.role, 'resources.any') ? undefined : identity.name;
}
