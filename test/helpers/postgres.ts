// The PostgreSQL server the store tests use, and the failure they give when it is not there
// (a test that needs it fails with how to start it; it is never skipped).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

export const pgUrl = process.env.AGENT_WORKFLOW_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/test';

const howToStart = `PostgreSQL is not reachable at ${pgUrl}. Start it with \`pg_ctlcluster --skip-systemctl-redirect 15 main start\` (or point AGENT_WORKFLOW_TEST_PG at a server where this user may create schemas).`;

export async function assertPostgresReachable(): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    throw new Error(`${howToStart} (${(err as Error).message})`);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * A schema of its own for one test file: the server is checked before the file's tests and the
 * schema dropped after them. Returns the schema's name.
 */
export function testSchema(prefix: string): string {
  const schema = `${prefix}_${randomBytes(4).toString('hex')}`;
  beforeAll(async () => assertPostgresReachable());
  afterAll(async () => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });
  return schema;
}
