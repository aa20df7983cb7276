import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { importFiles } from '../src/modules/imports/imports.files.js';
import { ndjsonLines } from '../src/modules/imports/imports.rows.js';

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

  it('fails the stream when a part is missing, with the file system’s error', async () => {
    const files = importFiles(dir);
    await (await files.stagePart('imp_gap', 1, Readable.from([Buffer.from('{"a":1}\n')]))).keep();
    const read = async () => {
      for await (const _chunk of files.open('imp_gap', 2)) void _chunk;
    };
    await expect(read()).rejects.toThrow(/ENOENT/);
  });
});
