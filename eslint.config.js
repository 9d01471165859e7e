// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'dist/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The plain-JavaScript entry points (bin/tenantctl.js, scripts/build-dist.js) run on Node.
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no I/O, no Node built-ins,
    // no database driver, and activities only as types (values would pull I/O in).
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({ name, message: 'Workflows are deterministic: no Node built-ins.' })),
            { name: 'pg', message: 'Workflows do no I/O: use an activity.' },
            { name: 'pino', message: 'Use log from @temporalio/workflow.' },
            {
              name: 'zod',
              message:
                'Validate inputs in the validateWorkflowInput local activity: zod in the bundle ' +
                'costs CPU on every run.',
            },
          ],
          patterns: [
            {
              group: [
                '**/activities/**',
                '../activities',
                '../activities/*',
                '**/src/db/**',
                '**/src/platform/**',
                // Schema modules load zod: workflows take their types only.
                '**/src/domain/tenant-input*',
                '**/src/domain/rotation-input*',
                '**/src/domain/drift-input*',
              ],
              allowTypeImports: true,
              message: 'Workflows import activities (and I/O modules) as types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // tenantctl prints values it did not write (from files, the platform, the gateway, other operators):
    // everything it prints goes through its one terminal-safe printer, which escapes controls.
    files: ['src/cli/**/*.ts'],
    ignores: ['src/cli/output.ts'],
    rules: {
      'no-console': 'error',
      'no-restricted-properties': [
        'error',
        ...['stdout', 'stderr'].map((property) => ({
          object: 'process',
          property,
          message: 'Print through src/cli/output.ts: it escapes terminal controls in what is shown.',
        })),
      ],
    },
  },
);
