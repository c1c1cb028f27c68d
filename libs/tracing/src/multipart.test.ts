import { randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '@slipway/domain';
import { boundaryOf, MultipartParser, type MultipartLimits, type MultipartPart } from './multipart.js';

/**
 * Seeded fuzz of the multipart parser: random bodies (parts whose bytes look like boundaries,
 * CRLFs and headers), cut into random chunks, must parse back to exactly their parts; random
 * mutations of them must either parse or be refused with a 413/422, never anything else.
 * SLIPWAY_FUZZ_SEED=<seed> replays a run.
 */
const SEED = Number(process.env.SLIPWAY_FUZZ_SEED ?? randomInt(2 ** 31));

/** mulberry32: small, seeded, good enough to spread test cases. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!,
  };
}

const LIMITS: MultipartLimits = {
  maxBodyBytes: 1 << 20,
  maxPartBytes: 64 << 10,
  maxPartHeaderBytes: 1024,
  maxParts: 50,
};
const BOUNDARY = '----LangSmithFormBoundaryq1w2e3';
const NASTY = [
  '\r\n',
  '--',
  `--${BOUNDARY}`,
  `\r\n--${BOUNDARY.slice(0, -1)}`,
  '\r\n\r\n',
  'Content-Type: x',
  '\u0000',
  '"',
  '\r',
  '\n',
];

function body(r: ReturnType<typeof rng>, parts: MultipartPart[], preamble = ''): Buffer {
  const chunks: Buffer[] = [Buffer.from(preamble)];
  for (const p of parts) {
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; ` +
          `name="${p.name}"\r\n${p.contentType ? `Content-Type: ${p.contentType}\r\n` : ''}\r\n`,
      ),
      p.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--${r.next() < 0.3 ? '\r\nepilogue' : '\r\n'}`));
  return Buffer.concat(chunks);
}

function randomPart(r: ReturnType<typeof rng>): MultipartPart {
  const pieces: Buffer[] = [];
  const n = r.int(12);
  for (let i = 0; i < n; i += 1) {
    const roll = r.next();
    if (roll < 0.4) pieces.push(Buffer.from(r.pick(NASTY)));
    else if (roll < 0.7) pieces.push(Buffer.from(Array.from({ length: r.int(64) }, () => r.int(256))));
    else pieces.push(Buffer.from('x'.repeat(r.int(4096))));
  }
  const data = Buffer.concat(pieces);
  // A part never contains its own delimiter (the client picks a boundary absent from the data).
  const safe = data.includes(`\r\n--${BOUNDARY}`) ? Buffer.from('safe') : data;
  return {
    name: `post.${r.int(1e6)}.inputs`,
    contentType: r.next() < 0.8 ? `application/json; length=${safe.length}` : '',
    data: safe,
  };
}

function parse(bytes: Buffer, r: ReturnType<typeof rng>): MultipartPart[] {
  const parser = new MultipartParser(BOUNDARY, LIMITS);
  let i = 0;
  while (i < bytes.length) {
    const size = r.next() < 0.05 ? 1 : 1 + r.int(r.next() < 0.3 ? 16 : 8192);
    parser.push(bytes.subarray(i, i + size));
    i += size;
  }
  return parser.end();
}

describe(`the multipart parser (seed ${SEED})`, () => {
  it('parses random bodies cut into random chunks back to their parts', () => {
    const r = rng(SEED);
    for (let round = 0; round < 150; round += 1) {
      const parts = Array.from({ length: r.int(6) }, () => randomPart(r));
      const got = parse(body(r, parts, r.next() < 0.2 ? 'preamble\r\n' : ''), r);
      expect(got, `seed ${SEED} round ${round}`).toEqual(parts);
    }
  });

  it('refuses mutated bodies with a 413 or 422, never another error', () => {
    const r = rng(SEED + 1);
    const outcomes = { parsed: 0, refused: 0 };
    for (let round = 0; round < 500; round += 1) {
      const bytes = Buffer.from(
        body(
          r,
          Array.from({ length: 1 + r.int(4) }, () => randomPart(r)),
        ),
      );
      const mutations = 1 + r.int(4);
      let mutated: Buffer = bytes;
      for (let m = 0; m < mutations; m += 1) {
        const at = r.int(mutated.length);
        const roll = r.next();
        if (roll < 0.3) mutated = mutated.subarray(0, at);
        else if (roll < 0.6) mutated[at] = r.int(256);
        else mutated = Buffer.concat([mutated.subarray(0, at), Buffer.from(r.pick(NASTY)), mutated.subarray(at)]);
      }
      try {
        parse(mutated, r);
        outcomes.parsed += 1;
      } catch (err) {
        expect(err, `seed ${SEED} round ${round}: ${(err as Error).message}`).toBeInstanceOf(AppError);
        expect([413, 422]).toContain((err as AppError).status);
        outcomes.refused += 1;
      }
    }
    expect(outcomes.refused).toBeGreaterThan(0);
  });

  it('stops at its limits: body, part, header block and part count', () => {
    const r = rng(SEED + 2);
    const big = { name: 'post.1', contentType: '', data: Buffer.alloc(LIMITS.maxPartBytes + 1, 0x61) };
    expect(() => parse(body(r, [big]), r)).toThrow(/part is larger/);
    const many = Array.from({ length: LIMITS.maxParts + 1 }, (_, i) => ({
      name: `post.${i}`,
      contentType: '',
      data: Buffer.from('{}'),
    }));
    expect(() => parse(body(r, many), r)).toThrow(/more than 50 parts/);
    expect(() => parse(Buffer.from(`--${BOUNDARY}\r\n${'X-Long: y\r\n'.repeat(200)}`), r)).toThrow(
      /headers are larger/,
    );
    const parser = new MultipartParser(BOUNDARY, LIMITS);
    expect(() => {
      for (let i = 0; i < 20; i += 1)
        parser.push(
          Buffer.from(
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="post.${i}"\r\n\r\n${'a'.repeat(60 << 10)}\r\n`,
          ),
        );
    }).toThrow(/body is larger/);
  });

  it('reads the boundary of a Content-Type, and only of multipart/form-data', () => {
    expect(boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(boundaryOf('multipart/form-data')).toBeNull();
    expect(boundaryOf('application/json; boundary=x')).toBeNull();
    expect(boundaryOf(`multipart/form-data; boundary=${'x'.repeat(71)}`)).toBeNull();
  });
});
