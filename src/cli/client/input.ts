/**
 * JSON a command reads from the user: `--input '{"a":1}'`, `--input @file.json`, `--input -`
 * (stdin), or stdin when no flag is given and stdin is not a terminal.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from '../usage-error.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parse(flag: string, where: string, text: string): unknown {
  if (text.trim() === '') throw new UsageError(`${flag}: ${where} is empty; give JSON`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${flag}: ${where} is not JSON: ${(err as Error).message}`);
  }
}

/** The JSON of `value` (`@file`, `-` or the text itself); undefined when `value` is. */
async function readJson(flag: string, value: string | undefined): Promise<unknown> {
  if (value === undefined) return undefined;
  if (value === '-') return parse(flag, 'stdin', await readStdin());
  if (value.startsWith('@')) {
    const path = value.slice(1);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new UsageError(
        `${flag}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    return parse(flag, path, text);
  }
  return parse(flag, 'the value', value);
}

/** `readJson`, falling back to stdin when no flag was given and stdin is a pipe or a file. */
export async function readJsonOrStdin(flag: string, value: string | undefined, what: string): Promise<unknown> {
  if (value !== undefined) return readJson(flag, value);
  if (process.stdin.isTTY) throw new UsageError(`give ${what}: ${flag} JSON, ${flag} @file.json, or JSON on stdin`);
  return parse(flag, 'stdin', await readStdin());
}

/** A JSON object from `--body`, or an empty one. */
export async function readBody(value: string | undefined): Promise<Record<string, unknown>> {
  const body = await readJson('--body', value);
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new UsageError('--body must be a JSON object (the API request)');
  return body as Record<string, unknown>;
}

/** `K=V` pairs (repeatable `--env`) as an object. */
export function envPairs(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env "${p}" is not KEY=VALUE`);
    env[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return env;
}
