import type { ParsedRotateTenantKeyInput } from '../../domain/rotation-input.js';

/**
 * Which deployers the configuration can run, as the starter sees it (the CLI and the gateway read the
 * same variables as the worker). A rotation whose deployer cannot run is refused at start, not
 * discovered by a failed run.
 */
export interface DeployerReadiness {
  defaultDeployer: 'notify' | 'project-env';
  /** ROTATION_NOTIFY_URL and ROTATION_NOTIFY_SECRET are both set. */
  notifyConfigured: boolean;
}

/** The configuration fields that decide it (see activities/rotation-options.ts's rotationConfigShape). */
export interface RotationDeployerEnv {
  ROTATION_DEPLOYER: 'notify' | 'project-env';
  ROTATION_NOTIFY_URL?: string | undefined;
  ROTATION_NOTIFY_SECRET?: string | undefined;
}

export function deployerReadinessOf(config: RotationDeployerEnv): DeployerReadiness {
  return {
    defaultDeployer: config.ROTATION_DEPLOYER,
    notifyConfigured: Boolean(config.ROTATION_NOTIFY_URL && config.ROTATION_NOTIFY_SECRET),
  };
}

export class DeployerNotConfiguredError extends Error {
  override name = 'DeployerNotConfiguredError';
  readonly code = 'DEPLOYER_NOT_CONFIGURED';
}

/** Throws DeployerNotConfiguredError when the rotation's deployer (its own, else the default) cannot run. */
export function assertDeployerReady(
  input: Pick<ParsedRotateTenantKeyInput, 'deployer'>,
  readiness: DeployerReadiness,
): void {
  const kind = input.deployer?.kind ?? readiness.defaultDeployer;
  if (kind === 'notify' && !readiness.notifyConfigured) {
    throw new DeployerNotConfiguredError(
      'the notify deployer is not configured (set ROTATION_NOTIFY_URL and ' +
        'ROTATION_NOTIFY_SECRET), or choose the project-env deployer: nothing was started',
    );
  }
}

/**
 * Starts the rotation of one tenant slot, or joins the one running (the workflow id is the business
 * key, conflict policy FAIL). An emergency start that finds a normal rotation running escalates it
 * instead: its quiet period drops to zero and the old key is revoked right after deploy.
 */
