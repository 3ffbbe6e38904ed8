// The process runtime's watchdog: a small process that outlives a server killed without closing
// (kill -9, a crash, an OOM kill) and stops the instances it left behind, so none runs on forever —
// a worker SDK polling a dead URL spins a CPU core. Started by watchdog.ts, one per ProcessRuntime,
// in a session of its own (a signal to the server's process group does not reach it).
//
// Plain JavaScript, no imports beyond Node's: it runs as it is from src/ (under tsx) and from dist/
// (the build compiles it with allowJs), with process.execPath and no flags.
//
// argv[2]: JSON { graceMs, stopGraceMs }. stdin: a pipe from the server, one JSON object a line:
//   {"guard": <pgid>, "id": "<instance id>"}  an instance's process group to stop should the server die
//   {"release": <pgid>}                       it ended or was stopped: forget it
//   {"bye": true}                             the server closed (its instances are stopped): exit now
// End of file without "bye" means the server died: the kernel closed its end of the pipe. The
// watchdog then waits `graceMs` (a server started again on the same data dir within it kills the
// leftovers itself, through the pid files), forgetting groups that end meanwhile, then sends
// SIGTERM to each group still there, SIGKILL `stopGraceMs` later, and exits. stderr: a log file.
//
// A group is signalled only while it is still the instance's: on Linux one of its live members must
// carry GANTRY_INSTANCE_ID=<id> in its environment (/proc/<pid>/environ), so a process group id
// the kernel handed to someone else is never hit. Elsewhere (no /proc) a group id cannot be reused
// while the group has members, and groups are checked every half second during the grace and
// forgotten once gone, which narrows reuse to that half second.
import { readdirSync, readFileSync } from 'node:fs';

process.title = 'gantry-watchdog';
const { graceMs = 30_000, stopGraceMs = 5_000 } = JSON.parse(process.argv[2] ?? '{}');
const FINAL_WAIT_MS = 5_000;
/** pgid → instance id */
const guarded = new Map();
let serverGone = false;

const log = (message) => process.stderr.write(`${new Date().toISOString()} watchdog ${process.pid}: ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let hasProc = true;
try {
  readFileSync('/proc/self/stat');
} catch {
  hasProc = false;
}

/** Live (not zombie) members of each process group, from /proc; null without /proc. */
function groupMembers() {
  if (!hasProc) return null;
  const members = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let text;
    try {
      text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // The command name sits in parentheses and may hold spaces: fields count from the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    const state = fields[0];
    const pgid = Number(fields[2]);
    if (state === 'Z' || state === 'X') continue;
    const list = members.get(pgid);
    if (list) list.push(pid);
    else members.set(pgid, [pid]);
  }
  return members;
}

/** Whether the group still has a live member. */
function groupAlive(pgid, members) {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  return members === null || (members.get(pgid)?.length ?? 0) > 0;
}

/** Whether the group is still instance `id`'s (see the header). */
function belongsTo(pgid, id, members) {
  if (members === null) return groupAlive(pgid, null);
  const marker = `GANTRY_INSTANCE_ID=${id}`;
  for (const pid of members.get(pgid) ?? []) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) return true;
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  return false;
}

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // gone (ESRCH) or not ours (EPERM)
  }
}

/** Forgets the groups that ended; answers how many are left. */
function forgetEnded() {
  const members = groupMembers();
  for (const pgid of guarded.keys()) if (!groupAlive(pgid, members)) guarded.delete(pgid);
  return guarded.size;
}

async function stopLeftovers() {
  let members = groupMembers();
  const targets = [...guarded].filter(([pgid, id]) => belongsTo(pgid, id, members));
  for (const [pgid, id] of targets) log(`stopping instance ${id} (process group ${pgid}): SIGTERM`);
  // SIGCONT after: a suspended (SIGSTOPped) group sees its SIGTERM only once continued.
  for (const [pgid] of targets) if (signalGroup(pgid, 'SIGTERM')) signalGroup(pgid, 'SIGCONT');
  const killAt = performance.now() + stopGraceMs;
  let left = targets;
  while (left.length > 0 && performance.now() < killAt) {
    await sleep(Math.min(50, Math.max(1, killAt - performance.now())));
    members = groupMembers();
    left = left.filter(([pgid]) => groupAlive(pgid, members));
  }
  members = groupMembers();
  for (const [pgid, id] of left) {
    if (!belongsTo(pgid, id, members)) continue;
    log(`instance ${id} (process group ${pgid}) outlived SIGTERM by ${stopGraceMs} ms: SIGKILL`);
    signalGroup(pgid, 'SIGKILL');
  }
  const doneBy = performance.now() + FINAL_WAIT_MS;
  while (left.length > 0 && performance.now() < doneBy) {
    await sleep(20);
    members = groupMembers();
    left = left.filter(([pgid]) => groupAlive(pgid, members));
  }
  for (const [pgid, id] of left) log(`instance ${id} (process group ${pgid}) is still there after SIGKILL`);
}

async function onServerGone(why) {
  if (serverGone) return;
  serverGone = true;
  if (forgetEnded() === 0) {
    log(`the server is gone (${why}); it left no instance running`);
    process.exit(0);
  }
  log(
    `the server is gone (${why}); ${guarded.size} instance group(s) are stopped in ${graceMs} ms unless they end first`,
  );
  const deadline = performance.now() + graceMs;
  for (;;) {
    if (forgetEnded() === 0) {
      log('every instance ended; nothing to stop');
      process.exit(0);
    }
    const left = deadline - performance.now();
    if (left <= 0) break;
    await sleep(Math.min(500, left));
  }
  await stopLeftovers();
  process.exit(0);
}

function onLine(line) {
  if (line.trim() === '') return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    log(`ignored a line that is not JSON: ${line.slice(0, 200)}`);
    return;
  }
  if (message.bye === true) process.exit(0);
  if (Number.isInteger(message.guard) && message.guard > 1 && typeof message.id === 'string')
    guarded.set(message.guard, message.id);
  else if (Number.isInteger(message.release)) guarded.delete(message.release);
  else log(`ignored an unknown message: ${line.slice(0, 200)}`);
}

let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    onLine(line);
  }
});
process.stdin.on('end', () => void onServerGone('its pipe closed without a goodbye'));
process.stdin.on('error', (err) => void onServerGone(`its pipe failed: ${err.message}`));
