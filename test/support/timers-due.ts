/**
 * Lets a component's own short interval run at least once, on a machine however loaded. Node runs
 * due timers in the order of their due times, so when a timer set now for `ms` fires, every
 * interval of period below `ms` that was already running has fired at least once since this call.
 * For a negative check ("the idle sweep has not closed it yet") where there is nothing to wait
 * for: it waits on the order of timers, not on how long the machine takes.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export const afterTimersDue = (ms: number): Promise<void> => sleep(ms);
