import { z } from 'zod';
import { area, emptyToUndefined, setting } from './helpers.js';

/** Where the parent's records live. */
const postgresUrl = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .refine((value) => {
      try {
        const url = new URL(value);
        return (
          (url.protocol === 'postgres:' || url.protocol === 'postgresql:') &&
          url.hostname !== '' &&
          url.pathname.length > 1
        );
      } catch {
        return false;
      }
    }, 'must be a URL like postgres://user:password@host:5432/database')
    .optional(),
);

export const databaseSettings = area('database', {
  DATABASE_URL: setting(postgresUrl, {
    description: "Postgres for the parent's records (`postgres://user:password@host:5432/database`).",
    secret: true,
    unset: 'none (the worker and gateway refuse to start)',
    devStack: 'embedded Postgres under `DATA_DIR` (tests: in a temp dir)',
  }),
});
