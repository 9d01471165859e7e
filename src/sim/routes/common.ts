import type { FastifyRequest } from 'fastify';
import {
  authenticate,
  checkProjectTenant,
  requireParent,
  resolveResourceContext,
  type Caller,
  type ResourceContext,
} from '../auth.js';
import { projectNotFound } from '../errors.js';
import type { SimRuntime } from '../runtime.js';
import type { ProjectRecord } from '../state.js';

export const API_PREFIX = '/api/v1';

export function callerOf(sim: SimRuntime, request: FastifyRequest): Caller {
  return authenticate(sim.state, request, sim.clock.now());
}

/** Authenticates a control-plane call and returns the calling parent's id. */
export function parentOf(sim: SimRuntime, request: FastifyRequest): string {
  return requireParent(callerOf(sim, request));
}

export function contextOf(sim: SimRuntime, request: FastifyRequest, caller = callerOf(sim, request)): ResourceContext {
  return resolveResourceContext(sim.state, caller, request, sim.choices.personalSubaccountHeader);
}

/** The request path without the query string: part of an idempotency fingerprint. */
export function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

export function params(request: FastifyRequest): Record<string, string> {
  return request.params as Record<string, string>;
}

/** A project is visible only in its own context; anything else is `project_not_found`, revealing nothing. */
export function getProjectInContext(sim: SimRuntime, context: ResourceContext, projectId: string): ProjectRecord {
  const project = sim.state.projects.get(projectId);
  if (!project || project.status !== 'active' || project.parentId !== context.parentId) throw projectNotFound();
  if (context.byProjectId) {
    if (!checkProjectTenant(sim.state, project.subaccountId)) throw projectNotFound();
    return project;
  }
  if (project.subaccountId !== context.subaccountId) throw projectNotFound();
  return project;
}
