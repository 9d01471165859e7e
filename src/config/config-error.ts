/**
 * A configuration the caller must fix, one problem a line (values never echoed). Apart from index.ts (the schema,
 * which loads zod): tenantctl's gateway commands, which read their few settings without it, throw it too.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}
