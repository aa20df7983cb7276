import { describe, expect, it } from 'vitest';
import { lineChart, stackedBars, valueAxis } from '../../src/dashboard/charts.js';

/** The labels of a chart's value axis, as written (right-aligned, unlike the labels under the columns). */
const axisLabels = (svg: string) => [...svg.matchAll(/<text [^>]*text-anchor="end">([^<]*)<\/text>/g)].map((m) => m[1]);

describe('valueAxis', () => {
  it('gives a count axis distinct whole-number ticks from 0, the top rounded up to a whole step', () => {
    const ticks = (max: number) => valueAxis(max, 'count').ticks;
    expect(ticks(0)).toEqual([0, 1]);
    expect(ticks(0.4)).toEqual([0, 1]);
    expect(ticks(1)).toEqual([0, 1]);
    expect(ticks(2)).toEqual([0, 1, 2]);
    expect(ticks(4)).toEqual([0, 1, 2, 3, 4]);
    expect(ticks(5)).toEqual([0, 2, 4, 6]);
    expect(ticks(7)).toEqual([0, 2, 4, 6, 8]);
    expect(ticks(10)).toEqual([0, 5, 10]);
    expect(ticks(11)).toEqual([0, 5, 10, 15]);
    expect(ticks(150)).toEqual([0, 50, 100, 150]);
    expect(ticks(1234)).toEqual([0, 500, 1000, 1500]);
  });

  it('keeps every count axis whole, distinct, at most 4 steps, and its top above the largest value by less than a step', () => {
    for (let max = 1; max <= 25_000; max += max < 200 ? 1 : 97) {
      const { top, ticks } = valueAxis(max, 'count');
      const step = ticks[1]! - ticks[0]!;
      expect(ticks[0]).toBe(0);
      expect(ticks.at(-1)).toBe(top);
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      expect(ticks.length).toBeLessThanOrEqual(5);
      expect(ticks.every((v, i) => Number.isInteger(v) && (i === 0 || v - ticks[i - 1]! === step))).toBe(true);
      expect(top).toBeGreaterThanOrEqual(max);
      expect(top - max).toBeLessThan(step);
    }
  });

  it('labels a measure axis (rates, shares, money) at 0, half and a round top', () => {
    expect(valueAxis(2.6, 'measure')).toEqual({ kind: 'measure', top: 5, ticks: [0, 2.5, 5] });
    expect(valueAxis(100, 'measure').ticks).toEqual([0, 50, 100]);
    expect(valueAxis(0, 'measure').ticks).toEqual([0, 0.5, 1]);
  });
});

describe('charts', () => {
  it('draws stacked bars as counts: a top of 1 reads 0, 1 (it read 0, 1, 1 with a tick at the half), a top of 3 reads 0 to 3', () => {
    const bars = (values: number[]) =>
      stackedBars({
        id: 'c',
        title: 'Loads',
        description: 'Loads per week',
        labels: values.map(String),
        series: [{ name: 'Loads', cls: 's0' }],
        values: [values],
      }).value;
    expect(bars([1, 0])).toContain('data-axis="count"');
    expect(axisLabels(bars([1, 0]))).toEqual(['0', '1']);
    expect(axisLabels(bars([3, 1]))).toEqual(['0', '1', '2', '3']);
  });

  it('draws lines as measures with fractional ticks, and leaves out a tick whose label would repeat', () => {
    const rates = lineChart({
      id: 'r',
      title: 'Rate',
      description: 'Rate per mile',
      labels: ['a', 'b'],
      series: [{ name: 'Rate', cls: 's0', values: [2.1, 2.6] }],
      format: (v) => `$${v.toFixed(2)}`,
    }).value;
    expect(rates).toContain('data-axis="measure"');
    expect(axisLabels(rates)).toEqual(['$0.00', '$2.50', '$5.00']);
    // Nothing on time yet: a top of 1% whose half would also read "1%".
    const share = lineChart({
      id: 's',
      title: 'On time',
      description: 'Share on time',
      labels: ['a'],
      series: [{ name: 'On time', cls: 's0', values: [0] }],
      format: (v) => `${v.toFixed(0)}%`,
    }).value;
    expect(axisLabels(share)).toEqual(['0%', '1%']);
  });
});
