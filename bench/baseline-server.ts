/**
 * The ceiling: a bare Fastify route answering a fixed JSON body of the same size as a load.
 *   PORT=18181 BODY_FILE=... npx tsx bench/baseline-server.ts
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const body = process.env.BODY_FILE ? readFileSync(process.env.BODY_FILE, 'utf8') : JSON.stringify({ ok: true });
const app = Fastify({ logger: false });
app.get('/baseline', async (_req, reply) => reply.type('application/json; charset=utf-8').send(body));
await app.listen({ port: Number(process.env.PORT ?? 18181), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
