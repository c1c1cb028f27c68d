import { describe, expect, it } from 'vitest';
import { capLogLine, LineSplitter } from './line-splitter.js';

const split = (chunks: Array<string | Buffer>, options: ConstructorParameters<typeof LineSplitter>[1] = {}) => {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l), options);
  for (const c of chunks) s.push(c);
  s.end();
  return lines;
};

describe('LineSplitter', () => {
  it('splits at newlines across chunks, dropping the \\r of \\r\\n', () => {
    expect(split(['a\r\nb', 'c\n', 'd'])).toEqual(['a', 'bc', 'd']);
  });

  it('keeps a multi-byte character split across two chunks whole', () => {
    const bytes = Buffer.from('é\n');
    expect(split([bytes.subarray(0, 1), bytes.subarray(1)])).toEqual(['é']);
  });

  it('in "any" mode breaks at \\r, \\n and \\r\\n (also split across chunks) once each', () => {
    expect(split(['10%\r20%\r', '\nend\n'], { breaks: 'any' })).toEqual(['10%', '20%', 'end']);
  });

  it('keeps max bytes of an over-long line and counts the rest, however it arrives', () => {
    const lines = split([...Array.from({ length: 100 }, () => 'x'.repeat(1000)), 'tail\nnext\n'], { max: 4096 });
    expect(lines).toEqual([`${'x'.repeat(4096)}… [${100_000 + 4 - 4096} bytes dropped]`, 'next']);
  });
});

describe('capLogLine', () => {
  it('cuts a long line with a marker, and leaves a line a splitter already capped alone', () => {
    expect(capLogLine('abcdef', 0, 4)).toBe('abcd… [2 bytes dropped]');
    expect(capLogLine('abcd… [2 bytes dropped]', 0, 4)).toBe('abcd… [2 bytes dropped]');
    expect(capLogLine('abc', 0, 4)).toBe('abc');
  });
});
