/**
 * What a worker's own calls say about the jobs it holds, read against what the store says it
 * holds (docs/serverless.md "Jobs a worker no longer holds"). Pure: the store lists the held jobs,
 * these rules pick those the worker has shown it no longer holds, and the store gives them back
 * as it does a lost worker's (the state machine's `worker-lost`).
 *
 * Two reports, and what each can prove:
 *
 * - A take with `job_in_progress=0` is built by the worker just before it is sent, after the
 *   answers to its earlier takes were recorded (the SDK takes one batch at a time and records its
 *   jobs as soon as they arrive). Every job the store says it holds from an earlier take is no
 *   longer held. The store applies that rule itself, in the take's own transaction, before the
 *   take claims anything: no clock and no order is needed (`HeldJobs.giveBackAll`).
 * - A ping's `job_id` list is a snapshot the worker's heartbeat took at some earlier moment: the
 *   Python SDK pings from another process, from a copied list, and retries a ping with the same
 *   list, so a ping built before a take can arrive after it. A ping proves a job unheld only
 *   against a moment it was surely built after (`stranded`, below).
 */

/** A job IN_PROGRESS on a worker, as the store holds it. */
export interface HeldJob {
  id: string;
  /** The order of the take that handed it out (later takes of a worker are larger); null: unknown. */
  takenSeq: number | null;
  /** When that take committed (ms). */
  startedAt: number;
}

/**
 * The held jobs a ping listing `listed` (possibly nothing) shows its worker no longer holds:
 *
 * - A ping listing a job the worker holds was built after that job's take was recorded, and
 *   hence after every earlier take's jobs were recorded too (takes are answered and recorded one
 *   after another). An unlisted job from a strictly earlier take (smaller `takenSeq`) is no longer
 *   held. Jobs of the same take are never judged against each other (the snapshot may be taken
 *   while a batch is being recorded), nor jobs of later takes (still on their way).
 * - A ping listing nothing at all has no such anchor; it was built no earlier than its arrival
 *   minus its time in flight. An unlisted job taken more than `settleMs` (the heartbeat timeout)
 *   before the ping arrived is no longer held.
 * - A ping listing only jobs the store does not give this worker proves nothing.
 */
export function stranded(
  listed: ReadonlySet<string>,
  held: readonly HeldJob[],
  arrivedAt: number,
  settleMs: number,
): HeldJob[] {
  if (listed.size === 0) return held.filter((j) => j.startedAt < arrivedAt - settleMs);
  let anchor: number | null = null;
  for (const j of held)
    if (listed.has(j.id) && j.takenSeq !== null && (anchor === null || j.takenSeq > anchor)) anchor = j.takenSeq;
  if (anchor === null) return [];
  const before = anchor;
  return held.filter((j) => !listed.has(j.id) && j.takenSeq !== null && j.takenSeq < before);
}

const PYTHON_SDK = /\bRunPod-Python-SDK\/(\d+)\.(\d+)\.(\d+)/i;

/**
 * Whether a take's `job_in_progress=0` from a client sending `userAgent` can be read as "holds no
 * job". The Python SDK names itself and its version there; before 1.7.6 it counted a taken job as
 * held only once it started running (or, earlier still, not while it ran), so its takes could say
 * 0 while it held one. Any other client is taken at its word.
 */
export function takeReportTrusted(userAgent: string | undefined): boolean {
  const m = userAgent ? PYTHON_SDK.exec(userAgent) : null;
  if (!m) return true;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return major > 1 || (major === 1 && (minor > 7 || (minor === 7 && patch >= 6)));
}
