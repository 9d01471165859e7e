// @ts-check
/* global module -- dependency-cruiser reads a CommonJS config */
/**
 * The import rules of the layout (docs/style.md, docs/architecture.md), checked by `npm run lint`: imports
 * point down only and never go round in a circle. Layers, top to bottom:
 *   src/cli, src/main            process entries and their wiring (cli may launch main's processes)
 *   src/gateway                  the HTTP app factory (app.ts), one folder an area (tenants/, keys/, money/, ...),
 *                                the helpers every area shares in http/
 *   src/client                   start / inspect / schedule helpers (clients of Temporal and the database)
 *   src/api-client               the gateway's HTTP client (tenantctl's operator commands, a TS signup backend)
 *   activities/                  createActivities(deps) and the pure logic only activities use
 *   src/platform, src/db, src/secrets, src/sim, src/infra   libraries
 *   src/domain                   what a workflow may import
 * workflows/ import src/domain, each other and activities as types only.
 * src/config/ is read by entries only (its defaults.ts, plain constants, by anyone but domain and workflows).
 */
const entries = '^src/(cli|main)/';
const libraries = '^src/(platform|db|secrets|sim|infra)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle (type-only imports count: they tie the files together just the same).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-import-of-entries',
      severity: 'error',
      comment:
        'Only entries import entries: libraries, activities, workflows, client and gateway never import cli/ or main/.',
      from: { path: '^(src|activities|workflows)/', pathNot: entries },
      to: { path: entries },
    },
    {
      name: 'main-not-cli',
      severity: 'error',
      comment: 'tenantctl launches the processes of main/, never the other way round.',
      from: { path: '^src/main/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'no-import-of-gateway',
      severity: 'error',
      comment: 'The gateway is an app on top: nothing below it imports from it.',
      from: { path: '^(activities|workflows|src/(domain|client|platform|db|secrets|sim|infra))/' },
      to: { path: '^src/gateway/' },
    },
    {
      name: 'no-import-of-client',
      severity: 'error',
      comment: 'Libraries, activities and workflows never start or inspect workflows.',
      from: { path: '^(activities|workflows|src/(domain|platform|db|secrets|sim|infra))/' },
      to: { path: '^src/client/' },
    },
    {
      name: 'libraries-below-activities',
      severity: 'error',
      comment: 'Libraries know nothing of activities or workflows.',
      from: { path: `${libraries}|^src/domain/` },
      to: { path: '^(activities|workflows)/' },
    },
    {
      name: 'domain-stands-alone',
      severity: 'error',
      comment: 'src/domain is what workflows import: it imports nothing of ours outside itself.',
      from: { path: '^src/domain/' },
      to: { path: '^(src|activities|workflows)/', pathNot: '^src/domain/' },
    },
    {
      name: 'workflows-import-domain-only',
      severity: 'error',
      comment: 'Workflows are deterministic: from our code only src/domain, other workflows, and activities as types.',
      from: { path: '^workflows/' },
      to: { path: '^src/', pathNot: '^src/domain/' },
    },
    {
      name: 'activities-not-workflows',
      severity: 'error',
      comment: 'Activities do not depend on workflow code.',
      from: { path: '^activities/' },
      to: { path: '^workflows/' },
    },
    {
      name: 'no-test-code-in-product',
      severity: 'error',
      comment: 'Test-only helpers live in test/harness: product code never imports from test/.',
      from: { path: '^(src|activities|workflows)/' },
      to: { path: '^test/' },
    },
    {
      name: 'config-is-a-leaf',
      severity: 'error',
      comment:
        'src/config/ reads and checks settings with the rules of src/domain/ only; turning them into options is main/wiring.',
      from: { path: '^src/config/' },
      to: { path: '^(src|activities|workflows)/', pathNot: '^src/(config|domain)/' },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      comment: 'No two folders import each other, directly or round a circle (type-only imports count).',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'gateway-through-client',
      severity: 'error',
      comment:
        'A request takes one path to the records: edge → src/client → src/db. No gateway file imports src/db (types ' +
        'included): it holds the pool as src/client/records.ts names it and calls src/client functions.',
      from: { path: '^src/gateway/' },
      to: { path: '^src/db/' },
    },
    {
      name: 'no-route-imports-route',
      severity: 'error',
      comment:
        "A route file is its area's and nothing else's helper library: shared request helpers live in " +
        'http/request-input.ts, the answers to typed errors in http/errors.ts.',
      from: { path: '^src/gateway/.+-routes\\.ts$' },
      to: { path: '^src/gateway/.+-routes\\.ts$' },
    },
    {
      name: 'gateway-areas-apart',
      severity: 'error',
      comment:
        'An area of the edge (a folder under src/gateway: tenants/, keys/, money/, ...) imports no other area: what ' +
        'two areas share lives in src/gateway/http/.',
      from: { path: '^src/gateway/([^/]+)/' },
      to: { path: '^src/gateway/[^/]+/', pathNot: '^src/gateway/($1|http)/' },
    },
    {
      name: 'gateway-http-shared',
      severity: 'error',
      comment: 'src/gateway/http/ is what every area shares: it imports no area, nor the app that registers them.',
      from: { path: '^src/gateway/http/' },
      to: { path: '^src/gateway/', pathNot: '^src/gateway/http/' },
    },
    {
      name: 'config-read-by-entries',
      severity: 'error',
      comment:
        'src/config/ (the only reader of process.env) is loaded by entries; libraries take typed options. ' +
        'Its defaults.ts holds plain constants any layer above src/domain may fall back to.',
      from: { path: '^(activities|workflows|src/(domain|platform|db|secrets|sim|infra|gateway|client))/' },
      to: { path: '^src/config/', pathNot: '^src/config/defaults\\.ts$', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|\\.data|coverage|bench/results)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs', '.cjs'] },
  },
};
