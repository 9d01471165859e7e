/**
 * The parent's records as the gateway holds them: a handle it passes to src/client's functions, which are the only
 * code above src/db that reads or writes them (a route never queries it itself).
 */
export type { Pool, Queryable } from '../db/pool.js';
