/**
 * Splits an inline command line into arguments exactly as the Redis server does (sds.c,
 * `sdssplitargs`): blanks separate arguments; "double quotes" take \n \r \t \b \a, \xHH and
 * \<any> escapes; 'single quotes' take \' only; a closing quote must be followed by a blank or
 * the end; quotes may open in the middle of an argument (ab"cd" is abcd). The line is a C string
 * to the server, so a NUL byte ends it. Returns null for unbalanced quotes (the server refuses
 * the request).
 */
export function splitInlineArgs(line: Buffer): Buffer[] | null {
  const end = line.indexOf(0) < 0 ? line.length : line.indexOf(0);
  const at = (i: number) => (i < end ? line[i]! : 0);
  const args: Buffer[] = [];
  let p = 0;
  for (;;) {
    while (p < end && isSpace(at(p))) p++;
    if (p >= end) return args;
    const current: number[] = [];
    let inDouble = false;
    let inSingle = false;
    for (let done = false; !done; ) {
      const c = at(p);
      if (inDouble || inSingle) {
        if (inDouble && c === BACKSLASH && at(p + 1) === X && isHex(at(p + 2)) && isHex(at(p + 3))) {
          current.push(parseInt(String.fromCharCode(at(p + 2), at(p + 3)), 16));
          p += 3;
        } else if (inDouble && c === BACKSLASH && at(p + 1)) {
          p++;
          current.push(ESCAPES[at(p)] ?? at(p));
        } else if (inSingle && c === BACKSLASH && at(p + 1) === SINGLE) {
          p++;
          current.push(SINGLE);
        } else if (c === (inDouble ? DOUBLE : SINGLE)) {
          // A closing quote must be followed by a blank or the end.
          if (at(p + 1) && !isSpace(at(p + 1))) return null;
          done = true;
        } else if (!c) {
          return null; // unterminated quotes
        } else {
          current.push(c);
        }
      } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0) {
        done = true;
      } else if (c === DOUBLE) {
        inDouble = true;
      } else if (c === SINGLE) {
        inSingle = true;
      } else {
        current.push(c);
      }
      if (at(p)) p++;
    }
    args.push(Buffer.from(current));
  }
}

const BACKSLASH = 0x5c;
const DOUBLE = 0x22;
const SINGLE = 0x27;
const X = 0x78;
/** The escapes of "double quotes" that are not the character itself. */
const ESCAPES: Record<number, number> = { 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x61: 0x07 };

/** C's isspace in the C locale: space, \t, \n, \v, \f, \r. */
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
