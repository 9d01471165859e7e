import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { sendData } from '../envelope.js';
import { validationError } from '../errors.js';
import { newId } from '../ids.js';
import { listResponse } from '../paging.js';
import type { SimRuntime } from '../runtime.js';
import { nextSeq, type ProjectRecord } from '../state.js';
import { parseBody, requiredText } from '../validation.js';
import { projectView } from '../views.js';
import { contextOf, getProjectInContext, params } from './common.js';

const createSchema = z.object({
  name: requiredText(100),
  region: z
    .string({ error: 'must be a string' })
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be a region name like "eu-central" (lowercase letters, digits, -)'),
});

const MAX_ENV_VARS = 200;
const envVarsSchema = z.object({
  variables: z
    .array(
      z.object({
        key: z
          .string({ error: 'must be a string' })
          .regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, 'must be a valid variable name'),
        value: z.string({ error: 'must be a string' }).max(32_768, 'must be at most 32768 characters'),
      }),
      { error: 'must be an array of { key, value }' },
    )
    .max(MAX_ENV_VARS, `must hold at most ${MAX_ENV_VARS} variables`),
});

/** Projects in the authenticated context, and their environment variables (set wholesale, never merged). */
export function registerProjectRoutes(app: FastifyInstance, sim: SimRuntime): void {
  const projectOf = (request: FastifyRequest) =>
    getProjectInContext(sim, contextOf(sim, request), params(request).projectId ?? '');

  app.get('/projects', (request, reply) => {
    const context = contextOf(sim, request);
    const projects = [...sim.state.projects.values()].filter(
      (p) => p.status === 'active' && p.parentId === context.parentId && p.subaccountId === context.subaccountId,
    );
    sendData(reply, 200, listResponse(request, sim.choices, projects, projectView));
  });

  app.post('/projects/create', (request, reply) => {
    const context = contextOf(sim, request);
    const body = parseBody(createSchema, request.body);
    const project: ProjectRecord = {
      seq: nextSeq(sim.state),
      id: newId('proj_'),
      parentId: context.parentId,
      subaccountId: context.subaccountId,
      name: body.name,
      region: body.region,
      status: 'active',
      createdAt: sim.clock.now(),
      deletedAt: null,
      envVars: [],
    };
    sim.state.projects.set(project.id, project);
    sendData(reply, sim.choices.createStatus, projectView(project));
  });

  app.get('/projects/:projectId', (request, reply) => {
    sendData(reply, 200, projectView(projectOf(request)));
  });

  const remove = (request: FastifyRequest, reply: FastifyReply) => {
    const project = projectOf(request);
    project.status = 'deleted';
    project.deletedAt = sim.clock.now();
    for (const webhook of [...sim.state.webhooks.values()]) {
      if (webhook.projectId === project.id) sim.state.webhooks.delete(webhook.id);
    }
    sendData(reply, 200, projectView(project));
  };
  app.post('/projects/:projectId/delete', remove);
  app.delete('/projects/:projectId/delete', remove);

  app.get('/projects/:projectId/env-vars', (request, reply) => {
    sendData(reply, 200, { variables: projectOf(request).envVars.map((v) => ({ ...v })) });
  });

  app.put('/projects/:projectId/env-vars/update', (request, reply) => {
    const project = projectOf(request);
    const { variables } = parseBody(envVarsSchema, request.body);
    const seen = new Set<string>();
    variables.forEach((v, i) => {
      if (seen.has(v.key)) throw validationError(`variables[${i}].key`, `duplicate key ${v.key}`);
      seen.add(v.key);
    });
    project.envVars = variables.map((v) => ({ key: v.key, value: v.value }));
    sendData(reply, 200, { variables: project.envVars.map((v) => ({ ...v })) });
  });
}
