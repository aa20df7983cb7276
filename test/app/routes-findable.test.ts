import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers.js';

/**
 * A URL can be grepped (docs/architecture.md, "Layers"): every API route the app serves is written out,
 * quoted, in its module's routes file (`app.get('/v2/tms-api/customers', customer.list)`), never built
 * from pieces.
 */
const MODULES = join(import.meta.dirname, '../../src/modules');

function routesFiles(): { file: string; text: string }[] {
  return readdirSync(MODULES, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.routes.ts'))
    .map((f) => ({ file: `src/modules/${f}`, text: readFileSync(join(MODULES, f), 'utf8') }));
}

const t = useApp();

describe('findable endpoints', () => {
  it('every API route URL is written out in one src/modules/**/*.routes.ts file', () => {
    const files = routesFiles();
    expect(t.routeTable.length).toBeGreaterThan(40);
    for (const route of t.routeTable) {
      const holders = files.filter((f) => f.text.includes(`'${route.url}'`)).map((f) => f.file);
      expect(holders, `${route.method} ${route.url}`).toHaveLength(1);
    }
  });
});
