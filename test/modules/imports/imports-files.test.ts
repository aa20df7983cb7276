import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { importFiles } from '../../../src/modules/imports/imports.files.js';
import { Type } from '@sinclair/typebox';
import { countRows, ndjsonLines, readCsvHeader, uploadRows } from '../../../src/modules/imports/imports.rows.js';
import { letTimePass } from '../../helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'lanebridge-import-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('an upload read back', () => {
  it('reads 25 parts as one stream, a record spanning two parts whole, without a listener warning', async () => {
    const files = importFiles(dir);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      // Part n ends inside record n+1, which the next part finishes.
      for (let n = 1; n <= 25; n++) {
        const text = `${n === 1 ? '' : `${n}"}\n`}{"n":${n},"tail":"${n === 25 ? `${n + 1}"}\n` : ''}`;
        const part = await files.stagePart('imp_files', n, Readable.from([Buffer.from(text)]));
        await part.keep();
      }
      const lines: string[] = [];
      for await (const line of ndjsonLines(files.open('imp_files', 25))) if ('text' in line) lines.push(line.text);
      expect(lines).toEqual(Array.from({ length: 25 }, (_, i) => `{"n":${i + 1},"tail":"${i + 2}"}`));
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toEqual([]);
  });

  it('reads parts through one reused buffer with the same lines as the stream: lines across reads and parts, CRLF split by a read, a line over the limit', async () => {
    const files = importFiles(dir);
    const line = (i: number) => JSON.stringify({ i, pad: 'x'.repeat(i % 997) });
    const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => line(from + i));
    // Part 1 over 1 MiB: its first read of 1 MiB ends inside a line.
    const p1 = range(0, 2500);
    // Part 2: CRLF lines, one sized so that its CR is the last byte of the part's first read and its LF
    // the first of the next.
    const head2 = range(2500, 1500).join('\r\n') + '\r\n';
    const filler = `{"f":"${'z'.repeat((1 << 20) - 1 - head2.length - 8)}"}`;
    const tail2 = range(4000, 100);
    expect(head2.length + filler.length).toBe((1 << 20) - 1);
    // Part 3: a line of 1 MiB + 1 byte (too long), a line, and the start of a line that part 4 ends; part
    // 4 then brings over 1 MiB of lines, which overwrite that start in the buffer: it must have been copied.
    const p4 = range(5000, 2500);
    const parts = [
      p1.join('\n') + '\n',
      head2 + filler + '\r\n' + tail2.join('\r\n') + '\r\n',
      `${'y'.repeat((1 << 20) + 1)}\n${line(4100)}\n{"i":4101,"split":"`,
      'here"}\n' + p4.join('\n') + '\n',
    ];
    expect(parts[0]!.length).toBeGreaterThan(1 << 20);
    expect(parts[3]!.length).toBeGreaterThan(1 << 20);
    for (const [k, text] of parts.entries()) await (await files.stagePart('imp_reused', k + 1, Readable.from([Buffer.from(text)]))).keep();
    const read = async (source: AsyncIterable<Buffer>) => {
      const out: string[] = [];
      for await (const l of ndjsonLines(source)) out.push('text' in l ? l.text : 'tooLong' in l ? `too long: ${l.tooLong}` : `not utf-8 at ${l.badUtf8}`);
      return out;
    };
    const expected = [...p1, ...range(2500, 1500), filler, ...tail2, `too long: ${(1 << 20) + 1}`, line(4100), '{"i":4101,"split":"here"}', ...p4];
    const reused = await read(files.chunks('imp_reused', 4));
    expect(reused).toEqual(expected);
    expect(await read(files.open('imp_reused', 4))).toEqual(expected);
    // The rows the runner reads, numbered alike: the refused long line is row 4102.
    let records = 0;
    const refused: number[] = [];
    for await (const r of uploadRows(files.chunks('imp_reused', 4), 'ndjson', { csv: {}, createSchema: Type.Object({}) })) {
      if ('record' in r) records++;
      else refused.push(r.row);
    }
    expect(refused).toEqual([4102]);
    expect(records).toBe(expected.length - 1);
    expect(await countRows(files.chunks('imp_reused', 4), 'ndjson', {})).toBe(expected.length);
  });

  it('fails the stream when a part is missing, with the file system’s error', async () => {
    const files = importFiles(dir);
    await (await files.stagePart('imp_gap', 1, Readable.from([Buffer.from('{"a":1}\n')]))).keep();
    const read = async () => {
      for await (const _chunk of files.open('imp_gap', 2)) void _chunk;
    };
    await expect(read()).rejects.toThrow(/ENOENT/);
  });
});

describe('a CSV upload with a part gone', () => {
  it('fails its count, its rows and its header read with the file system’s error, and the process goes on', async () => {
    const files = importFiles(dir);
    await (await files.stagePart('imp_csv_gap', 1, Readable.from([Buffer.from('external_reference_id,name\nC-1,One\n')]))).keep();
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await expect(countRows(files.open('imp_csv_gap', 2), 'csv', {})).rejects.toThrow(/ENOENT/);
      const rows = async () => {
        for await (const _row of uploadRows(files.open('imp_csv_gap', 2), 'csv', {
          csv: {},
          createSchema: Type.Object({ external_reference_id: Type.String(), name: Type.String() }),
        }))
          void _row;
      };
      await expect(rows()).rejects.toThrow(/ENOENT/);
      // The header is in part 1: read whole, the missing part is never needed.
      expect(await readCsvHeader(files.open('imp_csv_gap', 2), {})).toEqual(['external_reference_id', 'name']);
      await letTimePass(50); // an uncaught error of the read would come in this moment
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(uncaught).toEqual([]);
  });
});
