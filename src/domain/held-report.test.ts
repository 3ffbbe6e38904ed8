import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stranded, takeReportTrusted, type HeldJob } from './held-report.js';

const T = 1_000_000;
const SETTLE = 30_000;
const job = (id: string, takenSeq: number | null, startedAt = T): HeldJob => ({ id, takenSeq, startedAt });
const ids = (jobs: HeldJob[]) => jobs.map((j) => j.id);

test('a ping listing a held job shows every unlisted job of an earlier take no longer held', () => {
  const held = [job('old', 1), job('older', 0), job('listed', 2)];
  assert.deepEqual(ids(stranded(new Set(['listed']), held, T + 1, SETTLE)), ['old', 'older']);
});

test('a ping never judges a job of the same take as a listed one, nor of a later take', () => {
  const held = [job('batch-a', 5), job('batch-b', 5), job('later', 6)];
  assert.deepEqual(stranded(new Set(['batch-a']), held, T + 10 * SETTLE, SETTLE), []);
});

test('the latest take among the listed held jobs is the anchor', () => {
  const held = [job('a', 1), job('b', 2), job('c', 3), job('d', 4)];
  assert.deepEqual(ids(stranded(new Set(['a', 'c']), held, T, SETTLE)), ['b']);
});

test('a ping listing nothing shows jobs taken more than the settle time before it arrived no longer held', () => {
  const held = [job('long-ago', 7, T - SETTLE - 1), job('at-the-edge', 8, T - SETTLE), job('just-taken', 9, T)];
  assert.deepEqual(ids(stranded(new Set(), held, T, SETTLE)), ['long-ago']);
});

test('a ping listing only jobs this worker does not hold proves nothing, however old the held ones', () => {
  const held = [job('ancient', 1, T - 100 * SETTLE)];
  assert.deepEqual(stranded(new Set(['someone-elses', 'finished-long-ago']), held, T, SETTLE), []);
});

test('jobs taken before takes were ordered are judged by time only, never by order', () => {
  const held = [job('legacy', null, T - 100 * SETTLE), job('new', 3, T)];
  assert.deepEqual(stranded(new Set(['new']), held, T, SETTLE), [], 'no order: not before the anchor');
  assert.deepEqual(stranded(new Set(['legacy']), [job('legacy', null), job('x', 1)], T, SETTLE), [], 'no anchor');
  assert.deepEqual(ids(stranded(new Set(), held, T, SETTLE)), ['legacy']);
});

test("a take's job_in_progress=0 is read from any client but the Python SDKs that counted a taken job only once it ran", () => {
  const ua = (v: string) => `RunPod-Python-SDK/${v} (Linux 6.1.0; x86_64) Language/Python 3.11.7`;
  for (const v of ['1.7.6', '1.7.10', '1.8.0', '1.12.0', '2.0.0']) assert.equal(takeReportTrusted(ua(v)), true, v);
  for (const v of ['1.7.5', '1.7.2', '1.7.0', '1.6.2', '0.9.9']) assert.equal(takeReportTrusted(ua(v)), false, v);
  for (const other of [undefined, '', 'gantry-worker/0.1', 'python-requests/2.32.3', 'curl/8.5.0'])
    assert.equal(takeReportTrusted(other), true, String(other));
});
