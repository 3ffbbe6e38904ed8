/**
 * One step of the server's start: what it starts, and what undoes it. The composition root
 * declares its steps in a list; `startInOrder` walks it forward and the answer's `stop` walks back.
 */
export interface Step {
  /** Names the step in the ready line's per-step times and in errors. */
  name: string;
  start(): void | Promise<void>;
  /** Undoes `start`; runs only for a step whose start finished, once. */
  stop(): void | Promise<void>;
}

export interface StartedSteps {
  /** How long each step's start took, ms, by name, in start order. */
  readonly times: Record<string, number>;
  /** Stops the started steps in reverse order, each once; a second call waits for the first. */
  stop(): Promise<void>;
}

export interface StepOptions {
  /** Monotonic milliseconds. @default performance.now */
  now?: () => number;
  /** A step's stop that throws: the rest still stop. @default rethrown after every step has stopped */
  onStopError?: (step: string, err: unknown) => void;
  /** Told of each step as it starts and as it stops (tests record the order). */
  onStep?: (event: 'start' | 'stop', step: string) => void;
}

/**
 * Starts the steps one after another, in the order given. A start that throws stops the steps
 * already started, in reverse, and then rethrows: a failed start leaves nothing running.
 */
export async function startInOrder(steps: readonly Step[], options: StepOptions = {}): Promise<StartedSteps> {
  const now = options.now ?? (() => performance.now());
  const names = new Set<string>();
  for (const step of steps) {
    if (names.has(step.name)) throw new Error(`the start order names "${step.name}" twice`);
    names.add(step.name);
  }
  const started: Step[] = [];
  const times: Record<string, number> = {};
  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const errors: unknown[] = [];
      for (const step of started.reverse()) {
        try {
          options.onStep?.('stop', step.name);
          await step.stop();
        } catch (err) {
          if (options.onStopError) options.onStopError(step.name, err);
          else errors.push(err);
        }
      }
      if (errors.length === 1) throw errors[0];
      if (errors.length > 1) throw new AggregateError(errors, 'several steps failed to stop');
    })());
  for (const step of steps) {
    const at = now();
    try {
      options.onStep?.('start', step.name);
      await step.start();
    } catch (err) {
      await stop().catch(() => undefined);
      throw err;
    }
    times[step.name] = Math.round(now() - at);
    started.push(step);
  }
  return { times, stop };
}
