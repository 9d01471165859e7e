import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { actorOf, installAccessControl, ownerScopeOf, PUBLIC } from '../../src/gateway/http/access.js';
import { createTokenSet } from '../../src/gateway/http/auth.js';
import { answerError } from '../../src/gateway/http/errors.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { PERMISSIONS, ROLE_PERMISSIONS, ROLES, roleAllows, rolesMarkdown } from '../../src/domain/roles.js';

const BACKEND_TOKEN = 'backend-token-0123456789abcdef0123456789';
const viewer = generateOperator('vera', 'viewer');
const alice = generateOperator('alice');
const root = generateOperator('root', 'admin');

function directory() {
  const parsed = parseOperatorList([viewer.entry, alice.entry, root.entry].join(','));
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  return createOperatorDirectory(parsed.operators);
}

function app() {
  const fastify = Fastify();
  fastify.setErrorHandler((error, request, reply) => answerError(undefined, error, request, reply));
  installAccessControl(fastify, { backendTokens: createTokenSet([BACKEND_TOKEN]), identities: directory() });
  return fastify;
}

describe('gateway access control', () => {
  it('refuses to register a route that declares no permission', () => {
    const fastify = app();
    expect(() => fastify.get('/v1/forgotten', async () => ({}))).toThrow(/GET \/v1\/forgotten: declares no permission/);
  });

  it('authenticates every kind of token, refuses unknown ones alike, and checks the role', async () => {
    const fastify = app();
    fastify.get('/v1/read', { config: { permission: 'tenants.read' } }, async (request) => ({
      owner: ownerScopeOf(request) ?? null,
    }));
    fastify.post('/v1/decide', { config: { permission: 'approvals.decide' } }, async (request) => ({
      actor: actorOf(request, (request.body as { operator?: string }).operator, 'operator'),
    }));
    fastify.get('/open', { config: { permission: PUBLIC } }, async () => ({ open: true }));
    const get = (url: string, token?: string) =>
      fastify.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

    expect((await get('/open')).statusCode).toBe(200);
    for (const token of [undefined, 'nope', `${alice.token}x`]) {
      const answer = await get('/v1/read', token);
      expect(answer.statusCode).toBe(401);
      expect(answer.headers['www-authenticate']).toBe('Bearer');
    }
    expect((await get('/v1/read', BACKEND_TOKEN)).json()).toEqual({ owner: 'signup-backend' });
    expect((await get('/v1/read', viewer.token)).json()).toEqual({ owner: 'vera' });
    expect((await get('/v1/read', root.token)).json()).toEqual({ owner: null });

    const decide = (token: string, body: unknown) =>
      fastify.inject({
        method: 'POST',
        url: '/v1/decide',
        headers: { authorization: `Bearer ${token}` },
        payload: body as object,
      });
    const refused = await decide(viewer.token, {});
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ error: { code: 'FORBIDDEN' } });
    expect((await decide(BACKEND_TOKEN, {})).statusCode).toBe(403);
    expect((await decide(alice.token, {})).json()).toEqual({ actor: 'alice' });
    expect((await decide(alice.token, { operator: 'alice' })).json()).toEqual({ actor: 'alice' });
    const impersonation = await decide(alice.token, { operator: 'bob' });
    expect(impersonation.statusCode).toBe(400);
    expect(impersonation.json()).toMatchObject({ error: { code: 'INVALID_INPUT', fields: ['operator'] } });
  });

  it('keeps roles nested: each role may do what the one before it may, admins everything', () => {
    expect(ROLE_PERMISSIONS.admin.size).toBe(Object.keys(PERMISSIONS).length);
    for (const permission of ROLE_PERMISSIONS.viewer) expect(roleAllows('operator', permission)).toBe(true);
    for (const permission of ROLE_PERMISSIONS.backend) expect(roleAllows('operator', permission)).toBe(true);
    for (const role of ROLES.filter((r) => r !== 'admin'))
      for (const permission of ['close.immediate', 'resources.any'] as const)
        expect(roleAllows(role, permission)).toBe(false);
    expect(roleAllows('backend', 'approvals.read')).toBe(false);
    expect(roleAllows('backend', 'keys.force')).toBe(false);
  });

  it('parses roles in OPERATORS entries (operator when left out) and refuses an unknown role', () => {
    const parsed = parseOperatorList([viewer.entry, alice.entry].join(','));
    expect(parsed.ok && parsed.operators.map((o) => [o.name, o.role])).toEqual([
      ['vera', 'viewer'],
      ['alice', 'operator'],
    ]);
    expect(parseOperatorList(alice.entry.replace('alice:', 'alice:superuser:'))).toMatchObject({
      ok: false,
      problems: [expect.stringMatching(/^entry 1 must be name\[:role\]:sha256:/)],
    });
    expect(() => generateOperator('x', 'superuser' as never)).toThrow(/role: must be one of/);
  });

  it('renders the roles table with one row a permission and one column a role', () => {
    const lines = rolesMarkdown().split('\n');
    expect(lines[0]).toBe('| permission | what it allows | viewer | backend | operator | admin |');
    expect(lines).toHaveLength(2 + Object.keys(PERMISSIONS).length);
    expect(lines.find((line) => line.startsWith('| `keys.force`'))).toMatch(/\| — \| — \| yes \| yes \|$/);
  });
});
