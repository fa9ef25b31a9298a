// The connection pool of the PostgreSQL store and its transaction helper, shared by the journal
// (`stores/pg/journal.ts`) and run ownership (`stores/pg/ownership.ts`).
import { createRequire } from 'node:module';
import type * as PgModule from 'pg';
import type { Pool, PoolClient, QueryConfig, QueryResultRow } from 'pg';
import { StoreError } from '../../../core/store.js';

// `pg` is loaded when the first pool is made, not when the package is imported: a process on
// SQLite never pays for it (about a tenth of a cold start).
const requireFromHere = createRequire(import.meta.url);
let pgModule: typeof PgModule | undefined;
const loadPg = (): typeof PgModule => (pgModule ??= requireFromHere('pg') as typeof PgModule);

const int8Oid = 20;
/** Deadlock detected, serialization failure: the transaction was rolled back and may be retried. */
const retryableCodes = new Set(['40P01', '40001']);
const retriesMax = 4;

export function createPool(connectionString: string, poolSize: number): Pool {
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    // Sequence numbers, epochs, times (ms) and inbox ids are `bigint` columns; they stay far below
    // 2^53, so they come back as numbers, as from SQLite.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === int8Oid && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle connection that breaks (server restart) must not crash the process: the next query
  // gets a new connection, or fails with `store.io`.
  pool.on('error', () => {});
  return pool;
}

export type Querier = Pick<PoolClient, 'query'>;

export async function rows<R extends QueryResultRow>(q: Querier, config: QueryConfig): Promise<R[]> {
  return (await q.query<R>(config)).rows;
}

/** Runs `fn` in one transaction; retries it when PostgreSQL aborted it for a deadlock. */
export async function transaction<T>(pool: Pool, what: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw new StoreError('store.io', `${what}: cannot connect to PostgreSQL: ${(err as Error).message}`);
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      if (err instanceof StoreError) throw err;
      const code = (err as { code?: string }).code;
      if (code !== undefined && retryableCodes.has(code) && attempt < retriesMax) continue;
      throw new StoreError('store.io', `${what}: ${(err as Error).message}`);
    } finally {
      client.release(broken);
    }
  }
}

/** One statement outside a transaction, its failure as `store.io`. */
export async function statement<R extends QueryResultRow>(pool: Pool, what: string, config: QueryConfig): Promise<R[]> {
  try {
    return (await pool.query<R>(config)).rows;
  } catch (err) {
    throw new StoreError('store.io', `${what}: ${(err as Error).message}`);
  }
}
