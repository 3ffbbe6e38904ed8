/**
 * The create form of a resource page: the values typed, the API's messages shown at their field
 * (the others above the form), a busy flag; and the inputs bound to it.
 */
import { useState } from 'preact/hooks';
import { ApiProblem, fieldErrors } from '../api.js';
import { Field } from '../ui.js';

/** A create form's state: the values typed, the API's messages by field, a busy flag. */
export function useCreateForm<F extends Record<string, string | boolean>>(initial: F, fields: readonly string[]) {
  const [values, setValues] = useState<F>(initial);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [rest, setRest] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const set = (name: keyof F, value: string | boolean) => setValues((v) => ({ ...v, [name]: value }));
  /** Sends `call()`; on success resets the form and calls `done`, else spreads the problem over the fields. */
  const submit = async (call: () => Promise<unknown>, done: () => void, keep: Partial<F> = {}) => {
    setBusy(true);
    setErrors({});
    setRest([]);
    try {
      await call();
      setValues({ ...initial, ...keep });
      done();
    } catch (err) {
      const problem = err instanceof ApiProblem ? err : new ApiProblem(0, 'CLIENT', String(err));
      const { byField, rest: others } = fieldErrors(problem, fields);
      setErrors(byField);
      setRest(others);
    } finally {
      setBusy(false);
    }
  };
  return { values, set, errors, rest, busy, submit };
}

export function FormProblems({ messages }: { messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <p role="alert" class="problem">
      {messages.join('; ')}
    </p>
  );
}

export const splitList = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/** A number field sends what was typed: the API, not the browser, says what is wrong with it. */
export const numberOrText = (s: string): number | string =>
  s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s;

type CreateForm<F extends Record<string, string | boolean>> = ReturnType<typeof useCreateForm<F>>;

/** A text input bound to `form.values[name]`, with the API's message for `field` (default `name`) under it. */
export function TextField<F extends Record<string, string | boolean>>(props: {
  form: CreateForm<F>;
  id: string;
  name: Extract<keyof F, string>;
  label: string;
  field?: string;
  hint?: string;
  type?: 'text' | 'password';
  placeholder?: string;
  autocomplete?: string;
}) {
  const { form, name } = props;
  return (
    <Field
      id={props.id}
      label={props.label}
      error={form.errors[props.field ?? name]}
      {...(props.hint ? { hint: props.hint } : {})}
    >
      {(a) => (
        <input
          {...a}
          name={name}
          type={props.type ?? 'text'}
          {...(props.placeholder ? { placeholder: props.placeholder } : {})}
          {...(props.autocomplete ? { autocomplete: props.autocomplete } : {})}
          value={String(form.values[name])}
          onInput={(e) => form.set(name, e.currentTarget.value)}
        />
      )}
    </Field>
  );
}
