/**
 * The pod state machine (spec 3.1 plus DESIGN "Pod actions"). Pure: statuses, the actions each
 * status allows, and the transitions the controller and the actions make.
 */

export const POD_STATUSES = ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'] as const;
export type PodStatus = (typeof POD_STATUSES)[number];

export const POD_ACTIONS = ['start', 'stop', 'restart', 'terminate'] as const;
export type PodAction = (typeof POD_ACTIONS)[number];

/** What the user asked for; the controller drives `status` toward it. */
export const DESIRED_STATUSES = ['RUNNING', 'EXITED', 'TERMINATED'] as const satisfies readonly PodStatus[];
export type DesiredStatus = (typeof DESIRED_STATUSES)[number];

/**
 * Statuses of a pod whose instance runs or is being brought up: it holds its machine (GPUs,
 * ports), is billed, and an instance exiting or failing moves it.
 */
export const LIVE_POD_STATUSES = ['PROVISIONING', 'STARTING', 'RUNNING'] as const satisfies readonly PodStatus[];
export type LivePodStatus = (typeof LIVE_POD_STATUSES)[number];

/** Statuses of a pod with no instance: stopped, failed or gone. */
export const STOPPED_POD_STATUSES = ['EXITED', 'ERROR', 'TERMINATED'] as const satisfies readonly PodStatus[];

export const isLivePodStatus = (s: PodStatus): s is LivePodStatus =>
  (LIVE_POD_STATUSES as readonly PodStatus[]).includes(s);

const assertNever = (x: never): never => {
  throw new Error(`unexpected value ${String(x)}`);
};

/** Actions valid for a status, before the lock is applied. */
function actionsForStatus(status: PodStatus): PodAction[] {
  switch (status) {
    case 'RUNNING':
      return ['stop', 'restart', 'terminate'];
    case 'EXITED':
    case 'ERROR':
      return ['start', 'terminate'];
    case 'PROVISIONING':
    case 'STARTING':
      return ['stop', 'terminate'];
    case 'TERMINATED':
      return [];
    default:
      return assertNever(status);
  }
}

/** The `actions` array of a pod: valid transitions for its status; a locked pod cannot be stopped or restarted. */
export function actionsFor(status: PodStatus, locked: boolean): PodAction[] {
  const actions = actionsForStatus(status);
  return locked ? actions.filter((a) => a !== 'stop' && a !== 'restart') : actions;
}

type ActionRefusal = { ok: false; code: 'INVALID_STATE' | 'POD_LOCKED'; reason: string };
export type ActionDecision =
  | {
      ok: true;
      /** status the pod shows right after the action is accepted */
      status: PodStatus;
      desired: DesiredStatus;
    }
  | ActionRefusal;

/** Decides whether `action` is valid for a pod in `status`, and where it takes it. */
export function decideAction(status: PodStatus, locked: boolean, action: PodAction): ActionDecision {
  if (!actionsForStatus(status).includes(action)) {
    const allowed = actionsForStatus(status);
    return {
      ok: false,
      code: 'INVALID_STATE',
      reason: `A ${status} pod cannot ${action}; ${allowed.length ? `valid actions: ${allowed.join(', ')}` : 'it accepts no actions'}.`,
    };
  }
  if (locked && (action === 'stop' || action === 'restart'))
    return {
      ok: false,
      code: 'POD_LOCKED',
      reason: `The pod is locked; unlock it (PATCH {"locked": false}) before you ${action} it.`,
    };
  switch (action) {
    case 'start':
      return { ok: true, status: 'PROVISIONING', desired: 'RUNNING' };
    case 'stop':
      return { ok: true, status: 'EXITED', desired: 'EXITED' };
    case 'restart':
      return { ok: true, status: 'STARTING', desired: 'RUNNING' };
    case 'terminate':
      return { ok: true, status: 'TERMINATED', desired: 'TERMINATED' };
    default:
      return assertNever(action);
  }
}

/** What the controller observed about a pod's instance. */
export type PodEvent =
  { type: 'prepared' } | { type: 'ready' } | { type: 'exited'; reason: string } | { type: 'failed'; reason: string };

export type Transition = { ok: true; status: PodStatus; reason: string | null } | { ok: false; reason: string };

/**
 * The automatic moves: PROVISIONING → STARTING → RUNNING, and into EXITED or ERROR when the
 * instance stops on its own or cannot run. An instance that exits is not restarted: the pod
 * stays EXITED with the reason until the user starts it.
 */
export function nextPodState(status: PodStatus, event: PodEvent): Transition {
  switch (event.type) {
    case 'prepared':
      return status === 'PROVISIONING' ? { ok: true, status: 'STARTING', reason: null } : refuse(status, event.type);
    case 'ready':
      return status === 'STARTING' || status === 'PROVISIONING'
        ? { ok: true, status: 'RUNNING', reason: null }
        : refuse(status, event.type);
    case 'exited':
      return isLivePodStatus(status)
        ? { ok: true, status: 'EXITED', reason: event.reason }
        : refuse(status, event.type);
    case 'failed':
      return isLivePodStatus(status) ? { ok: true, status: 'ERROR', reason: event.reason } : refuse(status, event.type);
    default:
      return assertNever(event);
  }
}

const refuse = (status: PodStatus, event: string): Transition => ({
  ok: false,
  reason: `${event} does not apply to a ${status} pod`,
});
