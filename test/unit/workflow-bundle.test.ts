import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { quietLogger } from '../harness/quiet-logger.js';

/**
 * The workflow sandbox (reuseV8Context, the SDK default) evaluates every module of the bundle again for each
 * workflow it creates. A library that builds things as it loads costs that on every onboarding: zod, pulled in by
 * one constant imported from src/domain/events.ts, was a fifth of the workflow threads' CPU (issue 20's profile).
 * So the bundle holds the SDK and our workflow code, and a new package in it is a decision made here, on purpose.
 */
const ALLOWED_PACKAGES = ['@temporalio/common', '@temporalio/workflow', 'nexus-rpc', 'ms', 'long'];

const packageOf = (moduleId: string): string | undefined => {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(moduleId);
  return match?.[1];
};

describe('the production workflow bundle', () => {
  it('holds no package beyond the SDK (each module runs again for every workflow)', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)),
      logger: quietLogger('bundle'),
    });
    const modules = [...code.matchAll(/^\/\*\*\*\/ "(\.\/[^"]+)"/gm)].map((m) => m[1]!);
    expect(modules.length).toBeGreaterThan(50);
    const packages = [...new Set(modules.map(packageOf).filter((p): p is string => p !== undefined))].sort();
    expect(packages.filter((p) => !ALLOWED_PACKAGES.includes(p))).toEqual([]);
    // Our own modules in it are workflows and src/domain only (dependency-cruiser checks the imports; this checks
    // what actually got bundled, type-only imports erased).
    const ours = modules.filter((m) => !m.includes('node_modules/'));
    expect(ours.filter((m) => !/^\.\/(workflows|src\/domain)\//.test(m))).toEqual([]);
  }, 60_000);
});
