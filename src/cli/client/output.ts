/**
 * What a client command writes: `--json` puts exactly one JSON document (or, for a log stream, one
 * JSON object per line) on stdout and nothing else; people get aligned tables. Progress goes to
 * stdout only when it is a terminal and the output is not JSON, else to stderr.
 */
export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
}

export class Output {
  constructor(
    readonly json: boolean,
    private readonly streams: Streams = process,
  ) {}

  /** A JSON document on stdout: two-space indented, one trailing newline. */
  data(value: unknown): void {
    this.streams.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** One JSON value on one line (a stream of records). */
  record(value: unknown): void {
    this.streams.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** Text for people on stdout. */
  text(text: string): void {
    this.streams.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  /** `value` as JSON with --json, else `human()` as text. */
  show(value: unknown, human: () => string): void {
    if (this.json) this.data(value);
    else this.text(human());
  }

  /** A progress line: on stdout for a person at a terminal, else on stderr (stdout stays data). */
  progress(text: string): void {
    const toStdout = !this.json && this.streams.stdout.isTTY === true;
    (toStdout ? this.streams.stdout : this.streams.stderr).write(`${text}\n`);
  }

  /** A note on stderr. */
  note(text: string): void {
    this.streams.stderr.write(`${text}\n`);
  }
}

/** Rows under a header, columns padded to their widest cell and two spaces apart. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return [head, ...rows]
    .map((cells) =>
      cells
        .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `KEY  value` lines, keys padded: one resource read by a person. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width + 1)}  ${v}`).join('\n');
}

/** `-` for an absent value. */
export const orDash = (v: string | number | null | undefined): string =>
  v === null || v === undefined || v === '' ? '-' : String(v);

/** `45s`, `12m`, `3h`, `2d` since `iso`; `-` without one. */
export function age(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const s = Math.max(0, Math.floor((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
