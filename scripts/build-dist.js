#!/usr/bin/env node
/**
 * `npm run build` (also the `prepare` script, so `npm install` on a clone runs it): compiles src/,
 * workflows/ and activities/ to dist/ so that bin/tenantctl.js starts without transpiling. Emit
 * only (--noCheck): type errors are `npm run typecheck`'s business, not a reason to fail an install.
 * dist/.built records when the build STARTED: bin/tenantctl.js runs dist/ only while no source is
 * newer than that, so an edit made during or after a build is never shadowed by a stale copy.
 * Skipped, not failed, where there is nothing to build with (a production install without
 * TypeScript, or a Docker layer with package.json only): the launcher then runs the sources via tsx.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const startedAtMs = Date.now();
const skip = (why) => {
  console.error(`build: skipped (${why}); bin/tenantctl.js runs the TypeScript sources through tsx`);
  process.exit(0);
};
if (!existsSync(`${root}src/cli/main.ts`)) skip('no sources here');
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  skip('TypeScript is not installed');
}
rmSync(`${root}dist`, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`, '--noCheck'], {
  cwd: root,
  stdio: 'inherit',
});
if (result.status !== 0) {
  console.error(`build: tsc failed (exit ${result.status}); no dist/.built written, so the launcher keeps using tsx`);
  process.exit(result.status ?? 1);
}
// The workflow bundle, made once here: a worker run from dist/ loads it instead of running webpack in its own
// process at every start (issue 20: about 110 MB less worker RSS, and seconds less start-up). Without it (the
// bundler failed) the worker bundles workflows/ at start, as it does when run from the sources.
try {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  // The options every bundle of the project is made with (src/main/wiring/workflow-bundle.ts), as just compiled.
  const { workflowBundleOptions } = await import(`${root}dist/src/main/wiring/workflow-bundle.js`);
  const quiet = () => undefined;
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(`${root}workflows/index.ts`),
    logger: {
      log: quiet,
      trace: quiet,
      debug: quiet,
      info: quiet,
      warn: quiet,
      error: (m) => console.error(`build: ${m}`),
    },
  });
  writeFileSync(`${root}dist/workflow-bundle.js`, code);
} catch (error) {
  console.error(
    `build: no prebuilt workflow bundle (${error instanceof Error ? error.message : String(error)}); ` +
      'the worker bundles workflows/ when it starts',
  );
}
writeFileSync(`${root}dist/.built`, `${JSON.stringify({ startedAtMs })}\n`);
