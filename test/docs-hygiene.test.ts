import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue 30: the docs users read name no internal decision numbers ("D7 lane") and point to no file
// outside the repository.

const root = process.cwd();
const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('docs', () => {
  it.each(docs)('%s names no decision number and no file outside the repository', (file) => {
    const text = readFileSync(join(root, file), 'utf8');
    const numbers = text.split('\n').map((l, i) => [i + 1, l] as const).filter(([, l]) => /\bD\d{1,2}a?\b/.test(l.replace(/`[^`]*`/g, ''))); // code spans may hold EDI codes such as `D1`
    expect(numbers, file).toEqual([]);
    const outside = text.split('\n').map((l, i) => [i + 1, l] as const).filter(([, l]) => /\/work\/|\.\.\/shared|DECISIONS\.md|freight-api-spec/.test(l));
    expect(outside, file).toEqual([]);
    // Relative links stay inside the repository.
    const depth = file.split('/').length - 1;
    for (const m of text.matchAll(/\]\((\.\.\/[^)]*)\)/g)) expect(m[1]!.split('/').filter((p) => p === '..').length, `${file}: ${m[1]}`).toBeLessThanOrEqual(depth);
  });
});
