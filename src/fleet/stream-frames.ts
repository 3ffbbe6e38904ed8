/**
 * What a stream's dial-back connection carries (fleet-streams.ts), both ways: frames of
 * `[type (1 byte), length (4 bytes, big-endian), payload]`. Raw bytes for a shell's terminal,
 * JSON for the rest. Reading goes frame by frame through async iteration, so a reader that does
 * not keep up stops the socket (TCP carries the pressure back to the writer).
 */
import type { Readable } from 'node:stream';

export const FRAME = {
  /** terminal bytes: keystrokes to the shell, its output back */
  data: 0,
  /** `{ cols, rows }`: the client's window changed (to the agent) */
  resize: 1,
  /** `{ code }`: the shell ended (from the agent) */
  exit: 2,
  /** `OutputLine[]`: lines of the instance's output (from the agent) */
  lines: 3,
  /** `{ message }`: the stream cannot go on, in words a user can act on (from the agent) */
  error: 4,
} as const;

export type FrameType = (typeof FRAME)[keyof typeof FRAME];

export interface Frame {
  type: number;
  payload: Buffer;
}

/** Largest frame either side accepts. */
const MAX_FRAME_BYTES = 1024 * 1024;

const HEADER = 5;

export function encodeFrame(type: FrameType, payload: Buffer | string | object): Buffer {
  const body = Buffer.isBuffer(payload)
    ? payload
    : Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  if (body.length > MAX_FRAME_BYTES)
    throw new RangeError(`a stream frame of ${body.length} bytes is over the ${MAX_FRAME_BYTES}-byte limit`);
  const frame = Buffer.allocUnsafe(HEADER + body.length);
  frame.writeUInt8(type, 0);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, HEADER);
  return frame;
}

/** The frames of `source`, as they arrive; throws on a frame over the limit. `head`: bytes read before. */
export async function* readFrames(source: Readable, head: Buffer = Buffer.alloc(0)): AsyncGenerator<Frame> {
  let pending = head;
  const drain = function* (): Generator<Frame> {
    while (pending.length >= HEADER) {
      const length = pending.readUInt32BE(1);
      if (length > MAX_FRAME_BYTES)
        throw new RangeError(`a stream frame announced ${length} bytes, over the ${MAX_FRAME_BYTES}-byte limit`);
      if (pending.length < HEADER + length) return;
      yield { type: pending[0]!, payload: pending.subarray(HEADER, HEADER + length) };
      pending = pending.subarray(HEADER + length);
    }
  };
  yield* drain();
  for await (const chunk of source) {
    pending = pending.length === 0 ? (chunk as Buffer) : Buffer.concat([pending, chunk as Buffer]);
    yield* drain();
  }
}

/** A JSON frame's payload, or null when it is not JSON. */
export function frameJson(frame: Frame): unknown {
  try {
    return JSON.parse(frame.payload.toString('utf8'));
  } catch {
    return null;
  }
}
