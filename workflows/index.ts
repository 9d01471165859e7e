// Every production workflow, for the worker's bundle. Deterministic code only (see eslint.config.js).
export { onboardTenant } from './onboard-tenant.js';
