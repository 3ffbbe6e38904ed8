// A second reporter for scripts/test.mjs: after the whole run it prints, as TAP comments, every test
// that failed or was cancelled (with its file and the first line of its error) and the slowest
// files, so that the end of a long CI log says what went wrong without a search through it.
export default async function* summary(source) {
  const problems = [];
  const files = new Map(); // file -> { first, last }
  for await (const event of source) {
    const data = event.data ?? {};
    if (data.file && (event.type === 'test:dequeue' || event.type === 'test:pass' || event.type === 'test:fail')) {
      const now = Date.now();
      const seen = files.get(data.file);
      if (seen) seen.last = now;
      else files.set(data.file, { first: now, last: now });
    }
    if (event.type === 'test:stderr' && String(data.message).startsWith('linger-guard:')) {
      problems.push(String(data.message).trimEnd());
      continue;
    }
    if (event.type !== 'test:fail') continue;
    const error = data.details?.error;
    const type = error?.failureType;
    // A suite whose subtests failed repeats them; the subtests are listed themselves.
    if (type === 'subtestsFailed') continue;
    const cause = error?.cause;
    const message = String(cause?.message ?? cause ?? error?.message ?? 'failed').split('\n')[0];
    problems.push(
      `${type === 'testTimeoutFailure' || type === 'cancelledByParent' ? 'cancelled' : 'failed'}: ${data.name} (${data.file ?? '?'}) — ${message.slice(0, 300)}`,
    );
  }
  yield '# ---- summary ----\n';
  if (problems.length === 0) yield '# no test failed or was cancelled\n';
  else for (const line of problems) yield `# ${line}\n`;
  const slowest = [...files.entries()]
    .map(([file, t]) => ({ file, ms: t.last - t.first }))
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 8);
  yield `# slowest files: ${slowest.map((s) => `${s.file.replace(`${process.cwd()}/`, '')} ${(s.ms / 1000).toFixed(0)} s`).join(', ')}\n`;
}
