import { createPool } from '../../src/db/pool.js';

/** One normalised statement (pg_stat_statements: constants become $n) over a phase, per run of that phase. */
export interface StatementStat {
  /** The statement's text, whitespace collapsed and cut to `textChars`. */
  statement: string;
  callsPerRun: number;
  /** Execution and planning time inside Postgres, per run (ms): where its CPU goes, not the round trip. */
  execMsPerRun: number;
  planMsPerRun: number;
  /** Rows returned or changed, per call. */
  rowsPerCall: number;
}

export interface StatementStats {
  /** Forgets what was counted so far (every database of the server). */
  reset(): Promise<void>;
  /** The statements of this database since the last reset, by total time, each divided by `runs`. */
  read(runs: number): Promise<StatementStat[]>;
  close(): Promise<void>;
}

/**
 * pg_stat_statements for one benchmark database, on an embedded Postgres started with it preloaded
 * (BENCH_PG_STAT_STATEMENTS=1, bench/lib/infra.ts). Statements the bench's own checks send are counted too: read
 * right after the phase it measures.
 */
export async function statementStats(databaseUrl: string, textChars = 160): Promise<StatementStats> {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'tenant-orchestrator-bench-stats' });
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    async reset() {
      await pool.query('SELECT pg_stat_statements_reset()');
    },
    async read(runs) {
      const { rows } = await pool.query<{ query: string; calls: string; exec: number; plan: number; rows: string }>(
        `SELECT query, calls::text, total_exec_time AS exec, total_plan_time AS plan, rows::text
           FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND calls > 0 AND query NOT LIKE '%pg_stat_statements%'
          ORDER BY total_exec_time + total_plan_time DESC`,
      );
      const round = (x: number, places: number) => Math.round(x * 10 ** places) / 10 ** places;
      return rows.map((row) => ({
        statement: row.query.replace(/\s+/g, ' ').trim().slice(0, textChars),
        callsPerRun: round(Number(row.calls) / runs, 2),
        execMsPerRun: round(row.exec / runs, 3),
        planMsPerRun: round(row.plan / runs, 3),
        rowsPerCall: round(Number(row.rows) / Math.max(1, Number(row.calls)), 2),
      }));
    },
    close: () => pool.end(),
  };
}
