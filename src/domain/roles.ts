/**
 * Who may do what: every caller of the gateway is an identity (a name and a role), and every route
 * declares the one permission it needs (src/gateway/http/access.ts refuses to register a route that does
 * not). This table is the only place a role's rights are written: the gateway checks it, the route
 * table test walks it, and the roles table of docs/security.md is generated from it (`rolesMarkdown`).
 */

export const ROLES = ['viewer', 'backend', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Each permission with what it allows, in the words the roles table shows. */
export const PERMISSIONS = {
  'tenants.read': 'read tenants: status, statements, keys (ids and fingerprints), transfers, funding policies, plans',
  'approvals.read': 'list approval requests',
  'tenants.onboard': 'onboard a tenant (and dry-run an onboarding)',
  'tenants.lifecycle': 'suspend, resume, close (no sooner than CLOSE_DELAY), rotate keys',
  'keys.manage': "issue a slot's key and revoke it through the quiet gate",
  'funds.transfer': 'top up a tenant (within TRANSFER_MAX_MICRO_USD and the spend caps)',
  'funds.policy': "set or clear a tenant's auto top-up policy",
  'events.manage': 'subscribe to events; list, rotate, replay and delete its own subscriptions',
  'runs.decide':
    'decide for a waiting run: resolve a transfer, parent funded, rotation and key-limit decisions, cancel a ' +
    'delayed close',
  'fleet.manage': 'fleet-wide work: rotation, drift and top-up schedules, drift checks, the parent-wide spend caps',
  'webhooks.manage': 'registry webhooks: create, update, delete, list deliveries',
  'imports.manage': 'plan and apply imports of sub-accounts made elsewhere',
  'parent.key': "rotate the parent's own platform key and decide for its rotation",
  'keys.force': 'revoke a key without waiting for the quiet gate',
  'keys.reveal': "read a key's token once (audited; after a second operator's approval when APPROVAL_POLICY gates it)",
  'approvals.decide': "approve or reject another operator's request",
  'close.immediate': 'close a tenant sooner than CLOSE_DELAY',
  'resources.any': 'act on event subscriptions created by other callers',
  'plans.manage':
    'create plans and make new versions of them; roll a version out (start, pause, resume) and assign a plan to a ' +
    'tenant',
} as const;
export type Permission = keyof typeof PERMISSIONS;

const VIEWER: readonly Permission[] = ['tenants.read', 'approvals.read'];
const BACKEND: readonly Permission[] = [
  'tenants.read',
  'tenants.onboard',
  'tenants.lifecycle',
  'keys.manage',
  'funds.transfer',
  'funds.policy',
  'events.manage',
];
const OPERATOR: readonly Permission[] = [
  ...new Set([
    ...BACKEND,
    ...VIEWER,
    'runs.decide',
    'fleet.manage',
    'webhooks.manage',
    'imports.manage',
    'keys.force',
    'keys.reveal',
    'approvals.decide',
  ] as const),
];

export const ROLE_PERMISSIONS: Readonly<Record<Role, ReadonlySet<Permission>>> = {
  viewer: new Set(VIEWER),
  backend: new Set(BACKEND),
  operator: new Set(OPERATOR),
  admin: new Set(Object.keys(PERMISSIONS) as Permission[]),
};

export const ROLE_SUMMARIES: Readonly<Record<Role, string>> = {
  viewer: 'reads; for dashboards and auditors',
  backend: "a signup backend: onboards and runs its tenants' lifecycle and money within the server's limits",
  operator: 'a person on call: what a backend may do, plus forced revokes and four-eyes decisions',
  admin: 'everything, including immediate closes and other callers’ subscriptions',
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function roleAllows(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].has(permission);
}

/** The roles table of docs/security.md: one row a permission, one column a role. */
export function rolesMarkdown(): string {
  const header = `| permission | what it allows | ${ROLES.join(' | ')} |`;
  const rule = `|---|---|${ROLES.map(() => ':-:').join('|')}|`;
  const rows = (Object.entries(PERMISSIONS) as Array<[Permission, string]>).map(
    ([permission, meaning]) =>
      `| \`${permission}\` | ${meaning} | ` +
      `${ROLES.map((role) => (roleAllows(role, permission) ? 'yes' : '—')).join(' | ')} |`,
  );
  return [header, rule, ...rows].join('\n');
}
