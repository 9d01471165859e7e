import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowBundleOptions } from '../../src/main/wiring/workflow-bundle.js';
import { quietLogger } from '../harness/quiet-logger.js';
import { PRODUCTION_WORKFLOWS_ENTRY, WORKFLOW_BUNDLE_ENV } from '../harness/fast-setup.js';

/**
 * The workflow sandbox (reuseV8Context, the SDK default) evaluated every module of the bundle again for each
 * workflow it created. A library that builds things as it loads cost that on every onboarding: zod, pulled in by
 * one constant imported from src/domain/events.ts, was a fifth of the workflow threads' CPU (issue 20's profile).
 * Our bundles now preload their entry, so its modules are evaluated once and shared by every workflow of a worker
 * (src/main/wiring/workflow-bundle.ts). Both rules stay: the bundle holds the SDK and our workflow code (a new
 * package in it is a decision made here, on purpose), and none of our bundled modules keeps state of its own,
 * which a shared module would carry from one workflow into the next.
 */
const ALLOWED_PACKAGES = ['@temporalio/common', '@temporalio/workflow', 'nexus-rpc', 'ms', 'long'];

const packageOf = (moduleId: string): string | undefined => {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(moduleId);
  return match?.[1];
};

describe('the production workflow bundle', () => {
  it('holds no package beyond the SDK, preloads its entry, and none of our bundled modules keeps state', async () => {
    // The same bundle the workflow tests of this run use, when they run (test/harness/fast-setup.ts made it with
    // the same entry and options); bundled here otherwise.
    const shared = process.env[WORKFLOW_BUNDLE_ENV];
    const code = shared
      ? readFileSync(shared, 'utf8')
      : (
          await bundleWorkflowCode({
            ...workflowBundleOptions(PRODUCTION_WORKFLOWS_ENTRY),
            logger: quietLogger('bundle'),
          })
        ).code;
    const modules = [...code.matchAll(/^\/\*\*\*\/ "(\.\/[^"]+)"/gm)].map((m) => m[1]!);
    expect(modules.length).toBeGreaterThan(50);
    const packages = [...new Set(modules.map(packageOf).filter((p): p is string => p !== undefined))].sort();
    expect(packages.filter((p) => !ALLOWED_PACKAGES.includes(p))).toEqual([]);
    // Our own modules in it are workflows and src/domain only (dependency-cruiser checks the imports; this checks
    // what actually got bundled, type-only imports erased).
    const ours = modules.filter((m) => !m.includes('node_modules/'));
    expect(ours.filter((m) => !/^\.\/(workflows|src\/domain)\//.test(m))).toEqual([]);

    // Preloaded: the SDK's reusable context evaluates the entry, and so every module above, once per worker.
    expect(code).toMatch(
      /exports\.preloadModules = function preloadModules\(\) \{\s+__webpack_require__\([^)]*"\.\/workflows\/index\.ts"\);\s+\}/,
    );

    // Shared, so stateless: no module-level binding that can change, no module-level collection (deep-freezing
    // the exports stops a write to an exported object or array, not to a Map, a Set or a `let`).
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const stateful = ours.flatMap((m) =>
      readFileSync(`${root}${m.slice(2)}`, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${m}:${i + 1}` }))
        .filter(({ line }) =>
          /^(export )?(let|var) |^(export )?const \w+[^=]*= new (Map|Set|WeakMap|WeakSet)\b/.test(line),
        )
        .map(({ line, at }) => `${at}: ${line}`),
    );
    expect(stateful).toEqual([]);
  }, 60_000);
});
