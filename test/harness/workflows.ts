// The worker bundle used by the test suite: every production workflow plus harness-only ones.
export * from '../../workflows/index.js';
export * from './harness-workflow.js';
