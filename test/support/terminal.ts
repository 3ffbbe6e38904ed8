import type { Duplex } from 'node:stream';

/** Writes `line` to a terminal stream and waits until what it printed matches `until`; answers the output. */
export async function typeInto(stream: Duplex, line: string, until: RegExp, timeoutMs = 10_000): Promise<string> {
  let out = '';
  const seen = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.off('data', onData);
      reject(new Error(`no ${until} within ${timeoutMs} ms; the terminal printed ${JSON.stringify(out)}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      if (until.test(out)) {
        clearTimeout(timer);
        stream.off('data', onData);
        resolve(out);
      }
    };
    stream.on('data', onData);
  });
  stream.write(line + '\n');
  return seen;
}
