/**
 * The PostgreSQL ceiling for one round trip: a bare Fastify route that reads one load row by
 * (organization, reference) through `pg` (pool of 10, a named prepared statement) and sends it as JSON.
 * No key check, no stops, no schema: the least a GET by reference can cost on this database.
 *   PORT=18185 DATABASE_URL=postgres://... ORG_ID=... npx tsx bench/pg-ceiling-server.ts
 */
import Fastify from 'fastify';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const orgId = process.env.ORG_ID!;
const app = Fastify({ logger: false });
app.get<{ Params: { ref: string } }>('/loads/:ref', async (req, reply) => {
  const { rows } = await pool.query({
    name: 'ceiling_load_by_ref',
    text: 'select * from loads where org_id = $1 and external_reference_id = $2',
    values: [orgId, req.params.ref],
  });
  if (rows.length === 0) return reply.code(404).send({ error: 'not found' });
  return rows[0];
});
app.get('/healthz', async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT ?? 18185), host: '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => pool.end())
      .then(() => process.exit(0)),
);
