import pg from 'pg';

/**
 * A backup of the records and its restore, as production would take and restore one, while the worker and Temporal
 * keep running. The embedded Postgres ships no pg_dump, so the backup is SQL: every table of the records copied into
 * a schema of its own in ONE repeatable-read transaction (a consistent point in time, as pg_dump's snapshot is), with
 * each sequence's value. The restore replaces every table's rows by the backup's in one transaction (triggers off,
 * as pg_restore loads data) and sets the sequences back, then ends the worker's connections (a restored server is a
 * new server to its clients).
 */
export interface RecordsBackup {
  /** Rows per table at the backup (what the run prints). */
  rows: Record<string, number>;
  takenAt: Date;
}

const BACKUP_SCHEMA = 'chaos_backup';

async function withClient<T>(databaseUrl: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'chaos-backup' });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

async function recordTables(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  return rows.map((r) => r.name);
}

export async function backUpRecords(databaseUrl: string): Promise<RecordsBackup> {
  return withClient(databaseUrl, async (client) => {
    await client.query(`DROP SCHEMA IF EXISTS ${BACKUP_SCHEMA} CASCADE`);
    await client.query(`CREATE SCHEMA ${BACKUP_SCHEMA}`);
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    try {
      const rows: Record<string, number> = {};
      const takenAt = (await client.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
      for (const table of await recordTables(client)) {
        const id = client.escapeIdentifier(table);
        const created = await client.query(`CREATE TABLE ${BACKUP_SCHEMA}.${id} AS SELECT * FROM public.${id}`);
        rows[table] = created.rowCount ?? 0;
      }
      await client.query(
        `CREATE TABLE ${BACKUP_SCHEMA}.__sequences AS
           SELECT schemaname || '.' || sequencename AS name, last_value FROM pg_sequences
            WHERE schemaname = 'public'`,
      );
      await client.query('COMMIT');
      return { rows, takenAt };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  });
}

/** Puts the backup back over the live records; returns the rows per table before the restore (what it undid). */
export async function restoreRecords(databaseUrl: string): Promise<Record<string, number>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await restoreOnce(databaseUrl);
    } catch (error) {
      // The worker's transactions go on meanwhile: a deadlock with one of them is retried, as an operator would.
      if ((error as { code?: string }).code !== '40P01' || attempt >= 5) throw error;
    }
  }
}

async function restoreOnce(databaseUrl: string): Promise<Record<string, number>> {
  return withClient(databaseUrl, async (client) => {
    const before: Record<string, number> = {};
    await client.query('BEGIN');
    try {
      // pg_restore loads data with triggers off; the audit log's and the plans' append-only guards are triggers.
      await client.query(`SET LOCAL session_replication_role = replica`);
      const tables = await recordTables(client);
      // Every table at once, before anything is read: taken one by one they deadlock with the worker's writes.
      await client.query(
        `LOCK TABLE ${tables.map((t) => `public.${client.escapeIdentifier(t)}`).join(', ')} IN ACCESS EXCLUSIVE MODE`,
      );
      for (const table of tables) {
        const counted = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM public.${client.escapeIdentifier(table)}`,
        );
        before[table] = counted.rows[0]!.n;
      }
      await client.query(`TRUNCATE ${tables.map((t) => `public.${client.escapeIdentifier(t)}`).join(', ')}`);
      for (const table of tables) {
        const id = client.escapeIdentifier(table);
        await client.query(`INSERT INTO public.${id} OVERRIDING SYSTEM VALUE SELECT * FROM ${BACKUP_SCHEMA}.${id}`);
      }
      const { rows: sequences } = await client.query<{ name: string; last_value: string | null }>(
        `SELECT name, last_value::text FROM ${BACKUP_SCHEMA}.__sequences`,
      );
      for (const s of sequences) {
        if (s.last_value === null) await client.query('SELECT setval($1::regclass, 1, false)', [s.name]);
        else await client.query('SELECT setval($1::regclass, $2::bigint, true)', [s.name, s.last_value]);
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    await client.query(`DROP SCHEMA ${BACKUP_SCHEMA} CASCADE`);
    return before;
  });
}
