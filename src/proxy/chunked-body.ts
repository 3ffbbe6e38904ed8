/**
 * A chunked answer body (RFC 9112 7.1) read as it comes, in pieces of any size: which bytes are
 * data and where the body ends. A pod is untrusted, so a chunk size that is not hex (or too long a
 * line), data not followed by CRLF, or a trailer section past its limit is refused: the answer is
 * then cut, and its connection is never reused. Trailers are read and dropped.
 */

/** A size line (hex digits and extensions) or trailer section longer than this is refused. */
const MAX_LINE = 4096;
const MAX_TRAILERS = 16 * 1024;
/** 12 hex digits: 256 TiB, well inside a safe integer. */
const MAX_SIZE_DIGITS = 12;

/** Where in the framing the reader is. */
const State = {
  Size: 0,
  Extension: 1,
  SizeLf: 2,
  Data: 3,
  DataCr: 4,
  DataLf: 5,
  Trailer: 6,
  TrailerLf: 7,
  Done: 8,
} as const;
type State = (typeof State)[keyof typeof State];

export class ChunkedBody {
  #state: State = State.Size;
  #size = 0;
  #digits = 0;
  #line = 0;
  #trailers = 0;
  /** bytes of the current trailer line (0: the empty line that ends the body) */
  #trailerLine = 0;

  get done(): boolean {
    return this.#state === State.Done;
  }

  /**
   * Reads `bytes[start, end)`: `data(from, to)` is called for each run of body data in it, in
   * order. Answers how many bytes were the body's (the rest, once `done`, came after it), or why
   * the framing is refused.
   */
  read(
    bytes: Uint8Array,
    start: number,
    end: number,
    data: (from: number, to: number) => void,
  ): number | { refused: string } {
    let i = start;
    while (i < end && this.#state !== State.Done) {
      if (this.#state === State.Data) {
        const to = Math.min(end, i + this.#size);
        data(i, to);
        this.#size -= to - i;
        i = to;
        if (this.#size === 0) this.#state = State.DataCr;
        continue;
      }
      const c = bytes[i]!;
      i++;
      switch (this.#state) {
        case State.Size: {
          const digit = hexValue(c);
          if (digit >= 0) {
            if (++this.#digits > MAX_SIZE_DIGITS) return { refused: 'a chunk size is too large' };
            this.#size = this.#size * 16 + digit;
            this.#line++;
          } else if (this.#digits === 0) return { refused: 'a chunk size is not a hexadecimal number' };
          else if (c === 0x0d) this.#state = State.SizeLf;
          else if (c === 0x3b || c === 0x20 || c === 0x09) this.#state = State.Extension;
          else return { refused: 'a chunk size is not a hexadecimal number' };
          break;
        }
        case State.Extension:
          if (++this.#line > MAX_LINE) return { refused: 'a chunk size line is too long' };
          if (c === 0x0d) this.#state = State.SizeLf;
          else if (c === 0x0a) return { refused: 'a chunk size line is not ended by CRLF' };
          break;
        case State.SizeLf:
          if (c !== 0x0a) return { refused: 'a chunk size line is not ended by CRLF' };
          this.#line = 0;
          this.#digits = 0;
          if (this.#size === 0) {
            this.#state = State.Trailer;
            this.#trailerLine = 0;
          } else this.#state = State.Data;
          break;
        case State.DataCr:
          if (c !== 0x0d) return { refused: 'chunk data is not followed by CRLF' };
          this.#state = State.DataLf;
          break;
        case State.DataLf:
          if (c !== 0x0a) return { refused: 'chunk data is not followed by CRLF' };
          this.#state = State.Size;
          break;
        case State.Trailer:
          if (++this.#trailers > MAX_TRAILERS) return { refused: 'its trailers are too large' };
          if (c === 0x0d) this.#state = State.TrailerLf;
          else if (c === 0x0a) return { refused: 'a trailer line is not ended by CRLF' };
          else this.#trailerLine++;
          break;
        case State.TrailerLf:
          if (c !== 0x0a) return { refused: 'a trailer line is not ended by CRLF' };
          if (this.#trailerLine === 0) this.#state = State.Done;
          else {
            this.#trailerLine = 0;
            this.#state = State.Trailer;
          }
          break;
      }
    }
    return i - start;
  }
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}
