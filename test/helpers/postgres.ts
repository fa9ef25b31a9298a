// The PostgreSQL server the store tests use, and the failure they give when it is not there
// (a test that needs it fails with how to start it; it is never skipped).
import pg from 'pg';

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
