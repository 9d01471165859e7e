import type { PlatformClient } from '../../../src/platform/index.js';
import { activityFailure } from '../../failures.js';
import { FailureCode } from '../../../src/domain/failures.js';

/**
 * The `project-env` deployer: writes the tenant key into an environment variable of the tenant's
 * project(s), acting in the tenant through the parent's platform key. The platform replaces the
 * whole list on update, so every write is read-modify-write of the complete list; a variable that
 * already holds the value is left alone (a retry after a lost response then costs one read).
 * Without a named project, every project of the tenant that already defines the variable is updated.
 */
export interface ProjectEnvTarget {
  subaccountId: string;
  variable: string;
  projectId?: string | undefined;
}

export async function writeKeyToProjectEnv(
  platform: PlatformClient,
  target: ProjectEnvTarget,
  token: string,
  signal?: AbortSignal,
): Promise<{ projects: string[]; unchanged: string[] }> {
  const auth = { kind: 'platform', subaccountId: target.subaccountId } as const;
  const call = signal ? { signal } : {};
  const candidates = target.projectId
    ? [target.projectId]
    : (await platform.listProjects({ auth, ...call })).projects.map((p) => p.id);
  const projects: string[] = [];
  const unchanged: string[] = [];
  for (const projectId of candidates) {
    const { vars } = await platform.getEnvVars({ projectId, auth, ...call });
    if (!target.projectId && !(target.variable in vars)) continue;
    if (vars[target.variable] === token) {
      unchanged.push(projectId);
      continue;
    }
    await platform.putEnvVars({ projectId, auth, vars: { ...vars, [target.variable]: token }, ...call });
    projects.push(projectId);
  }
  if (projects.length + unchanged.length === 0) {
    throw activityFailure(
      FailureCode.DEPLOY_TARGET_MISSING,
      `no project of sub-account ${target.subaccountId} defines ${target.variable}: ` +
        `name a project for the project-env deployer`,
    );
  }
  return { projects, unchanged };
}
