import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Where the derived geocoder data lives. Next to this module when run from src/ (tsx, vitest);
 * a `tsc` build to dist/ does not copy non-TypeScript files, so dist/geo/ falls back to
 * src/geo/data/ of the same checkout.
 */
const DATA_DIR_CANDIDATES = [new URL('./data/', import.meta.url), new URL('../../src/geo/data/', import.meta.url)];

let resolvedDataDir: URL | undefined;

function dataDir(): URL {
  if (resolvedDataDir) return resolvedDataDir;
  for (const candidate of DATA_DIR_CANDIDATES) {
    if (existsSync(new URL('iso3166.json', candidate))) {
      resolvedDataDir = candidate;
      return candidate;
    }
  }
  throw new Error(
    `geocoder data not found (looked in ${DATA_DIR_CANDIDATES.map((u) => fileURLToPath(u)).join(', ')}); ` +
      'regenerate it with: npx tsx scripts/geo/build-data.ts',
  );
}

export function readDataFile(name: string): string {
  return readFileSync(new URL(name, dataDir()), 'utf8');
}

/** Lines of a derived .tsv file, without its `#` header comments, split into columns. */
export function readTsvRows(name: string): string[][] {
  const rows: string[][] = [];
  for (const line of readDataFile(name).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    rows.push(line.split('\t'));
  }
  return rows;
}

/** A value computed on first use and kept for the life of the process. */
export function lazy<T>(load: () => T): () => T {
  let value: T | undefined;
  let loaded = false;
  return () => {
    if (!loaded) {
      value = load();
      loaded = true;
    }
    return value as T;
  };
}
