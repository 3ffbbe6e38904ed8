/**
 * Splits a pod's `args` string into argv words the way a POSIX shell would for simple input:
 * whitespace separates words, '…' is literal, "…" allows \" and \\, and a backslash outside
 * quotes escapes a quote, a backslash or a blank. No expansion of any kind ($VAR, globs, ~):
 * the words go to the command as they are, since there is no shell in between.
 */
export function splitArgs(input: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    const next = input[i + 1];
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
      continue;
    }
    if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && (next === '"' || next === '\\')) word += input[++i];
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && next !== undefined && (next === '"' || next === "'" || next === '\\' || /\s/.test(next))) {
      word += input[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new Error(`its args have an unterminated ${quote} quote: ${input}`);
  if (inWord) words.push(word);
  return words;
}
