import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_RECORD_BYTES, ndjsonLines, uploadRows, countRows } from '../../../src/modules/imports/imports.rows.js';
import { Type } from '@sinclair/typebox';

const collect = async <T>(it: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('NDJSON lines of an upload', () => {
  it('splits on LF, CRLF and a lone CR (as readline did) across any chunk boundary; a last line without its end counts; an end at the end adds no line', async () => {
    const text = '{"a":1}\r\n\n{"b":"é"}\n{"c":3}\r{"d":4}\r\r\n{"e":5}';
    const bytes = Buffer.from(text);
    for (let size = 1; size <= bytes.length; size++) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size));
      expect(await collect(ndjsonLines(chunks)), `chunks of ${size}`).toEqual([
        { text: '{"a":1}' },
        { text: '' },
        { text: '{"b":"é"}' },
        { text: '{"c":3}' },
        { text: '{"d":4}' },
        { text: '' },
        { text: '{"e":5}' },
      ]);
    }
    expect(await collect(ndjsonLines([Buffer.from('{"a":1}\n')]))).toEqual([{ text: '{"a":1}' }]);
  });

  it('a line past 1 MiB is reported by its length, never held whole, and the lines after it are read', async () => {
    const big = 'x'.repeat(64 * 1024);
    const chunks = [Buffer.from('{"ok":1}\n{"long":"'), ...Array.from({ length: 48 }, () => Buffer.from(big)), Buffer.from('"}\n{"ok":2}\n')];
    const lines = await collect(ndjsonLines(chunks));
    expect(lines).toEqual([{ text: '{"ok":1}' }, { tooLong: '{"long":"'.length + 48 * big.length + '"}'.length }, { text: '{"ok":2}' }]);
    expect(MAX_RECORD_BYTES).toBe(1 << 20);
  });

  it('uploadRows refuses the long row with a message that says what to fix, numbers every row, and countRows agrees', async () => {
    const long = `{"external_reference_id":"B","name":"${'y'.repeat(MAX_RECORD_BYTES)}"}`;
    const body = () => Readable.from([Buffer.from('{"external_reference_id":"A"}\n' + long + '\n{"external_reference_id":"C"}\n')]);
    const rows = await collect(uploadRows(body(), 'ndjson', { csv: {}, createSchema: Type.Object({}) }));
    expect(rows.map((r) => r.row)).toEqual([1, 2, 3]);
    expect(rows[1]).toEqual({
      row: 2,
      refused: { ref: null, detail: `The line is ${long.length} bytes; a record is at most ${MAX_RECORD_BYTES} bytes (1 MiB): is a line end missing?` },
    });
    expect(rows[2]).toEqual({ row: 3, record: { external_reference_id: 'C' } });
    expect(await countRows(body(), 'ndjson', {})).toBe(3);
  });
});

describe('refused text in an upload', () => {
  it('a NUL or a lone surrogate in an NDJSON row refuses that row as the API refuses the body; a CSV cell with NUL too', async () => {
    const ndjson = Readable.from([
      Buffer.from(
        '{"external_reference_id":"A","name":"ok"}\n{"external_reference_id":"B","name":"x\\u0000y"}\n{"external_reference_id":"C","contacts":[{"first_name":"\\ud800"}]}\n',
      ),
    ]);
    const rows = await collect(uploadRows(ndjson, 'ndjson', { csv: {}, createSchema: Type.Object({}) }));
    expect(rows[0]).toEqual({ row: 1, record: { external_reference_id: 'A', name: 'ok' } });
    expect(rows[1]).toEqual({
      row: 2,
      refused: { ref: 'B', detail: [{ type: 'value_error', loc: ['body', 'name'], msg: 'Value error, text must not contain NUL (\\u0000) characters' }] },
    });
    expect(rows[2]).toMatchObject({ row: 3, refused: { ref: 'C', detail: [{ type: 'string_unicode', loc: ['body', 'contacts', 0, 'first_name'] }] } });
    const csv = Readable.from([Buffer.from('external_reference_id,name\nA,ok\nB,x\u0000y\n')]);
    const csvRows = await collect(
      uploadRows(csv, 'csv', { csv: {}, createSchema: Type.Object({ external_reference_id: Type.String(), name: Type.String() }) }),
    );
    expect(csvRows[0]).toEqual({ row: 1, record: { external_reference_id: 'A', name: 'ok' } });
    expect(csvRows[1]).toEqual({
      row: 2,
      refused: { ref: null, detail: [{ type: 'value_error', loc: ['body', 'name'], msg: 'Value error, text must not contain NUL (\\u0000) characters' }] },
    });
  });
});
