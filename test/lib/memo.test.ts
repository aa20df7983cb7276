import { describe, expect, it } from 'vitest';
import { boundedMemo } from '../../src/lib/memo.js';

describe('boundedMemo', () => {
  it('keeps at most maxEntries, the least recently used out first (a get counts as a use)', () => {
    const m = boundedMemo<number>({ maxEntries: 2 });
    m.set('a', 1);
    m.set('b', 2);
    expect(m.get('a')).toBe(1);
    m.set('c', 3);
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([1, undefined, 3]);
    expect(m.size).toBe(2);
  });

  it('keeps the weight in all under maxWeight, and the right total when a key is set again (two requests that both missed)', () => {
    const m = boundedMemo<number[]>({ maxEntries: 100, maxWeight: 10, weight: (v) => v.length });
    m.set('a', [1, 2, 3]);
    m.set('a', [1, 2, 3, 4]);
    expect(m.weight).toBe(4);
    m.set('b', [1, 2, 3, 4]);
    expect(m.weight).toBe(8);
    // 8 + 3 > 10: the least recently used ('a') goes.
    m.set('c', [1, 2, 3]);
    expect([m.get('a'), m.get('b')?.length, m.get('c')?.length]).toEqual([undefined, 4, 3]);
    expect(m.weight).toBe(7);
    // Heavier than the bound on its own: not kept, and nothing else is pushed out for it.
    m.set(
      'huge',
      Array.from({ length: 11 }, (_, i) => i),
    );
    expect(m.get('huge')).toBeUndefined();
    expect([m.size, m.weight]).toEqual([2, 7]);
    // Set again many times over (concurrent misses of one lane): the total never drifts.
    for (let i = 0; i < 1000; i++) m.set('b', [1, 2, 3, 4]);
    expect([m.size, m.weight]).toEqual([2, 7]);
  });
});
