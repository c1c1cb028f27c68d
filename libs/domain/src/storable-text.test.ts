import { describe, expect, it } from 'vitest';
import { hasUnstorableCharacter, toStorableText, toStorableValue } from './storable-text.js';

describe('storable text', () => {
  it.each([
    ['', false],
    ['plain', false],
    ['emoji 😀 and ü', false],
    ['\u0000', true],
    ['a\u0000b', true],
    ['\ud800', true],
    ['x\ud83d', true],
    ['\ude00x', true],
    ['\ude00\ud83d', true],
    ['\ud83d\ude00', false],
    ['\uFFFD\u200b\u202e', false],
  ])('%j has an unstorable character: %s', (text, expected) => {
    expect(hasUnstorableCharacter(text)).toBe(expected);
  });

  it('replaces each unstorable character with U+FFFD and keeps everything else', () => {
    expect(toStorableText('a\u0000b\ud800c\ud83d\ude00d\udc00')).toBe('a\uFFFDb\uFFFDc\ud83d\ude00d\uFFFD');
    expect(toStorableText('\u0000\u0000')).toBe('\uFFFD\uFFFD');
    const clean = 'nothing to do';
    expect(toStorableText(clean)).toBe(clean);
  });

  it('cleans keys and values of nested JSON values', () => {
    expect(toStorableValue({ 'k\u0000': ['v\ud800', { x: 1, y: null, z: true }], n: 2 })).toEqual({
      'k\uFFFD': ['v\uFFFD', { x: 1, y: null, z: true }],
      n: 2,
    });
    expect(toStorableValue('s\u0000')).toBe('s\uFFFD');
    expect(toStorableValue(42)).toBe(42);
  });
});
