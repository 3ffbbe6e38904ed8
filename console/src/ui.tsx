import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem, type Account } from './api.js';
import type { Template } from './types.js';

/** The signed-in account and what its key may do. */
export const Session = createContext<{ account: Account; canWrite: boolean }>({
  account: { id: '', name: '', key: { id: '', scope: 'read' } },
  canWrite: false,
});
export const useSession = () => useContext(Session);

export const READ_ONLY_TITLE = 'This API key is read-only: it cannot make changes.';

/** A button that changes something: disabled, saying why, for a read-only key. */
export function WriteButton(props: {
  onClick?: () => void;
  type?: 'button' | 'submit';
  class?: string;
  disabled?: boolean;
  busy?: boolean;
  label?: string;
  children: ComponentChildren;
}) {
  const { canWrite } = useSession();
  const disabled = !canWrite || props.disabled === true || props.busy === true;
  return (
    <button
      type={props.type ?? 'button'}
      class={props.class}
      disabled={disabled}
      aria-busy={props.busy ? 'true' : undefined}
      aria-label={props.label}
      title={canWrite ? undefined : READ_ONLY_TITLE}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}

/**
 * Calls `load` now and every `ms` while the tab is visible (a short poll: the pages stay live
 * without reloads). `deps` restart it. Answers the last value and the last problem.
 */
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []) {
  const [value, setValue] = useState<T | null>(null);
  const [problem, setProblem] = useState<ApiProblem | null>(null);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      if (document.visibilityState !== 'hidden') {
        try {
          const v = await loadRef.current();
          if (stopped) return;
          setValue(v);
          setProblem(null);
        } catch (err) {
          if (stopped) return;
          setProblem(err instanceof ApiProblem ? err : new ApiProblem(0, 'CLIENT', String(err)));
        }
      }
      if (!stopped) timer = setTimeout(() => void run(), ms);
    };
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ms, tick, ...deps]);
  return { value, problem, reload: () => setTick((t) => t + 1), setValue };
}

export function ProblemNote({ problem }: { problem: ApiProblem | null }) {
  if (problem === null) return null;
  return (
    <p role="alert" class="problem">
      {problem.detail}
      {problem.code && problem.status !== 0 ? <small> ({problem.code})</small> : null}
    </p>
  );
}

/** A labelled form field with the API's message for it under the input. */
export function Field(props: {
  id: string;
  label: string;
  error?: string | undefined;
  hint?: string;
  children: (aria: { id: string; 'aria-invalid'?: 'true'; 'aria-describedby'?: string }) => ComponentChildren;
}) {
  const errorId = `${props.id}-error`;
  const hintId = `${props.id}-hint`;
  const describedBy = [props.error ? errorId : null, props.hint ? hintId : null].filter(Boolean).join(' ');
  return (
    <label for={props.id}>
      {props.label}
      {props.children({
        id: props.id,
        ...(props.error ? { 'aria-invalid': 'true' as const } : {}),
        ...(describedBy ? { 'aria-describedby': describedBy } : {}),
      })}
      {props.error ? (
        <small id={errorId} class="field-error" data-field-error={props.id}>
          {props.error}
        </small>
      ) : props.hint ? (
        <small id={hintId}>{props.hint}</small>
      ) : null}
    </label>
  );
}

export const money = (usd: number) => `$${usd.toFixed(usd < 1 ? 3 : 2)}`;

export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.floor(seconds)}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m ${Math.floor(seconds % 60)}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export const StatusBadge = ({ status }: { status: string }) => (
  <span class={`status status-${status.toLowerCase()}`}>{status}</span>
);

/** A percentage as a labelled meter (keyboard and screen readers read the value). */
export const Meter = ({ label, value }: { label: string; value: number }) => (
  <div class="meter">
    <span>{label}</span>
    <progress value={value} max={100} aria-label={`${label} ${value}%`} />
    <span>{value}%</span>
  </div>
);

/** A template picker (name and image per option), its API message under it. */
export function TemplateSelect(props: {
  id: string;
  label: string;
  error: string | undefined;
  templates: readonly Template[];
  value: string;
  onChange: (templateId: string) => void;
}) {
  return (
    <Field id={props.id} label={props.label} error={props.error}>
      {(a) => (
        <select {...a} name="templateId" value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">Choose…</option>
          {props.templates.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name} ({t.image})
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
