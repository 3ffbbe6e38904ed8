/**
 * The account's resources that a pod or an endpoint names: templates, network volumes, container
 * registry credentials and SSH keys. Each page lists them, creates one through a form whose API
 * messages show at their field, and deletes one after a confirmation. Write controls are disabled
 * for a read key.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiProblem, fieldErrors } from '../api.js';
import type { Template } from '../types.js';
import { Field, ProblemNote, usePoll, WriteButton } from '../ui.js';

/** A create form's state: the values typed, the API's messages by field, a busy flag. */
function useCreateForm<F extends Record<string, string | boolean>>(initial: F, fields: readonly string[]) {
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

function FormProblems({ messages }: { messages: string[] }) {
  if (messages.length === 0) return null;
  return (
    <p role="alert" class="problem">
      {messages.join('; ')}
    </p>
  );
}

/** A delete button that asks first (a second button confirms); the API's refusal shows above the list. */
function DeleteButton(props: { what: string; onDelete: () => Promise<void>; onProblem: (p: ApiProblem) => void }) {
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  if (confirming)
    return (
      <span class="confirm">
        <WriteButton
          class="contrast"
          busy={busy}
          label={`Confirm: delete ${props.what}`}
          onClick={() => {
            setBusy(true);
            props
              .onDelete()
              .catch((err: unknown) =>
                props.onProblem(err instanceof ApiProblem ? err : new ApiProblem(0, 'CLIENT', String(err))),
              )
              .finally(() => {
                setBusy(false);
                setConfirming(false);
              });
          }}
        >
          Delete
        </WriteButton>{' '}
        <button type="button" class="secondary outline" onClick={() => setConfirming(false)}>
          Cancel
        </button>
      </span>
    );
  return (
    <WriteButton class="secondary outline" label={`Delete ${props.what}`} onClick={() => setConfirming(true)}>
      Delete
    </WriteButton>
  );
}

function ListTable({ head, children, empty }: { head: string[]; children: ComponentChildren[]; empty: string }) {
  if (children.length === 0) return <p>{empty}</p>;
  return (
    <div class="table-wrap">
      <table class="striped">
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

const splitList = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

/** A number field sends what was typed: the API, not the browser, says what is wrong with it. */
const numberOrText = (s: string): number | string => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s);

type CreateForm<F extends Record<string, string | boolean>> = ReturnType<typeof useCreateForm<F>>;

/** A text input bound to `form.values[name]`, with the API's message for `field` (default `name`) under it. */
function TextField<F extends Record<string, string | boolean>>(props: {
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

/** Deletes the resource at `path`, then reloads the list. */
const deleteAt = (path: string, reload: () => void) => async () => {
  await api('DELETE', path);
  reload();
};

/** One row of a resource list: its cells, and what its delete button removes. */
interface ResourceRow {
  key: string;
  /** `data-*` attributes that name the row (tests and scripts find rows by them). */
  data: Record<string, string>;
  cells: ComponentChildren[];
  remove: { what: string; run: () => Promise<void> };
}

/**
 * The shape every resource page shares: a heading and intro, the live list (a delete button per
 * row, the API's refusal shown above it) and a create form whose API messages show at their field.
 */
function ResourcePage(props: {
  title: string;
  intro?: ComponentChildren;
  /** The list's problem (a failed poll). */
  problem: ApiProblem | null;
  /** The rows, or null while the first answer is awaited. */
  rows: ResourceRow[] | null;
  loading: string;
  head: string[];
  empty: string;
  /** The create form: its state (`useCreateForm`), heading, accessible name and submit label; its fields are the children. */
  form: { rest: string[]; busy: boolean };
  formTitle: string;
  formLabel?: string;
  submit: string;
  onSubmit: (e: Event) => void;
  children: ComponentChildren;
}) {
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
  return (
    <section>
      <hgroup class="page-head">
        <h1>{props.title}</h1>
      </hgroup>
      {props.intro}
      <ProblemNote problem={props.problem ?? listProblem} />
      {props.rows === null ? (
        <p aria-busy="true">{props.loading}</p>
      ) : (
        <ListTable head={[...props.head, '']} empty={props.empty}>
          {props.rows.map((row) => (
            <tr key={row.key} {...Object.fromEntries(Object.entries(row.data).map(([k, v]) => [`data-${k}`, v]))}>
              {row.cells.map((cell, i) => (
                <td key={i}>{cell}</td>
              ))}
              <td>
                <DeleteButton
                  what={row.remove.what}
                  onProblem={setListProblem}
                  onDelete={async () => {
                    await row.remove.run();
                    setListProblem(null);
                  }}
                />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      <article>
        <header>
          <h2>{props.formTitle}</h2>
        </header>
        <form onSubmit={props.onSubmit} noValidate aria-label={props.formLabel ?? props.formTitle}>
          <FormProblems messages={props.form.rest} />
          {props.children}
          <WriteButton type="submit" busy={props.form.busy}>
            {props.submit}
          </WriteButton>
        </form>
      </article>
    </section>
  );
}

export function TemplatesPage() {
  const { value, problem, reload } = usePoll(() => api<{ templates: Template[] }>('GET', '/v2/templates'), 10_000);
  const form = useCreateForm({ name: '', image: '', disk: '20', ports: '', serverless: false }, [
    'name',
    'image',
    'disk',
    'ports',
    'serverless',
  ]);
  const v = form.values;
  const create = (e: Event) => {
    e.preventDefault();
    void form.submit(
      () =>
        api('POST', '/v2/templates', {
          name: v.name,
          image: v.image,
          disk: numberOrText(v.disk),
          ports: splitList(v.ports),
          serverless: v.serverless,
        }),
      reload,
    );
  };
  return (
    <ResourcePage
      title="Templates"
      problem={problem}
      loading="Loading templates…"
      head={['Name', 'Image', 'Disk', 'Ports', 'Kind']}
      empty="No templates yet."
      rows={
        value?.templates.map((t) => ({
          key: t.id,
          data: { template: t.id },
          cells: [
            t.name,
            <code>{t.image}</code>,
            `${t.disk} GB`,
            t.ports.join(', ') || '—',
            t.serverless ? 'serverless' : 'pod',
          ],
          remove: {
            what: `template ${t.name}`,
            run: deleteAt(`/v2/templates/${encodeURIComponent(t.id)}`, reload),
          },
        })) ?? null
      }
      form={form}
      formTitle="New template"
      submit="Create template"
      onSubmit={create}
    >
      <div class="grid">
        <TextField form={form} id="template-name" name="name" label="Name" />
        <TextField form={form} id="template-image" name="image" label="Image" placeholder="ubuntu:22.04" />
      </div>
      <div class="grid">
        <TextField form={form} id="template-disk" name="disk" label="Disk (GB)" />
        <TextField form={form} id="template-ports" name="ports" label="Ports" hint="e.g. 8888/http, 22/tcp" />
      </div>
      <label>
        <input
          type="checkbox"
          name="serverless"
          checked={v.serverless}
          onChange={(e) => form.set('serverless', e.currentTarget.checked)}
        />
        Serverless (for endpoints)
      </label>
    </ResourcePage>
  );
}

interface Volume {
  id: string;
  name: string;
  size: number;
  dataCenter: string;
  type: string;
}

export function VolumesPage() {
  const { value, problem, reload } = usePoll(
    () => api<{ networkVolumes: Volume[] }>('GET', '/v2/network-volumes'),
    10_000,
  );
  const { value: dcs } = usePoll(
    () => api<{ dataCenters: Array<{ id: string; name: string }> }>('GET', '/v2/catalog/datacenters'),
    600_000,
  );
  const form = useCreateForm({ name: '', size: '10', dataCenter: '' }, ['name', 'size', 'dataCenter']);
  const v = form.values;
  const dataCenter = v.dataCenter || dcs?.dataCenters[0]?.id || '';
  const create = (e: Event) => {
    e.preventDefault();
    void form.submit(
      () => api('POST', '/v2/network-volumes', { name: v.name, size: numberOrText(v.size), dataCenter }),
      reload,
      { dataCenter: v.dataCenter },
    );
  };
  return (
    <ResourcePage
      title="Network volumes"
      problem={problem}
      loading="Loading volumes…"
      head={['Name', 'Size', 'Data center', 'Type']}
      empty="No network volumes yet."
      rows={
        value?.networkVolumes.map((vol) => ({
          key: vol.id,
          data: { volume: vol.id },
          cells: [vol.name, `${vol.size} GB`, vol.dataCenter, vol.type],
          remove: {
            what: `volume ${vol.name}`,
            run: deleteAt(`/v2/network-volumes/${encodeURIComponent(vol.id)}`, reload),
          },
        })) ?? null
      }
      form={form}
      formTitle="New network volume"
      submit="Create volume"
      onSubmit={create}
    >
      <div class="grid">
        <TextField form={form} id="volume-name" name="name" label="Name" />
        <TextField form={form} id="volume-size" name="size" label="Size (GB)" hint="10 to 4096; may only grow later" />
        <Field id="volume-dc" label="Data center" error={form.errors.dataCenter}>
          {(a) => (
            <select
              {...a}
              name="dataCenter"
              value={dataCenter}
              onChange={(e) => form.set('dataCenter', e.currentTarget.value)}
            >
              {(dcs?.dataCenters ?? []).map((dc) => (
                <option key={dc.id} value={dc.id}>
                  {dc.id} ({dc.name})
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
    </ResourcePage>
  );
}

export function RegistriesPage() {
  const { value, problem, reload } = usePoll(
    () => api<{ registries: Array<{ id: string; name: string }> }>('GET', '/v2/registries'),
    10_000,
  );
  const form = useCreateForm({ name: '', username: '', password: '' }, ['name', 'username', 'password']);
  const v = form.values;
  const create = (e: Event) => {
    e.preventDefault();
    // the password goes to the API once and is cleared from the form whatever the answer
    const body = { name: v.name, username: v.username, password: v.password };
    form.set('password', '');
    void form.submit(() => api('POST', '/v2/registries', body), reload);
  };
  return (
    <ResourcePage
      title="Registry credentials"
      intro={
        <p>
          Credentials pods and templates name as <code>registry</code> to pull private images. The server keeps them
          encrypted and never answers the username or password back.
        </p>
      }
      problem={problem}
      loading="Loading credentials…"
      head={['Name', 'Id']}
      empty="No registry credentials yet."
      rows={
        value?.registries.map((r) => ({
          key: r.id,
          data: { registry: r.id },
          cells: [r.name, <code>{r.id}</code>],
          remove: {
            what: `credential ${r.name}`,
            run: deleteAt(`/v2/registries/${encodeURIComponent(r.id)}`, reload),
          },
        })) ?? null
      }
      form={form}
      formTitle="New registry credential"
      submit="Store credential"
      onSubmit={create}
    >
      <div class="grid">
        <TextField form={form} id="registry-name" name="name" label="Name" />
        <TextField form={form} id="registry-username" name="username" label="Username" autocomplete="off" />
        <TextField
          form={form}
          id="registry-password"
          name="password"
          label="Password or token"
          type="password"
          autocomplete="new-password"
        />
      </div>
    </ResourcePage>
  );
}

export function SshKeysPage() {
  const { value, problem, reload, setValue } = usePoll(
    () => api<{ keys: string[] }>('GET', '/v2/account/ssh-keys'),
    30_000,
  );
  const form = useCreateForm({ key: '' }, ['keys']);
  const keys = value?.keys ?? null;
  const put = async (next: string[]) =>
    setValue(await api<{ keys: string[] }>('PUT', '/v2/account/ssh-keys', { keys: next }));
  const add = (e: Event) => {
    e.preventDefault();
    void form.submit(() => put([...(keys ?? []), form.values.key.trim()]), reload);
  };
  return (
    <ResourcePage
      title="SSH keys"
      intro={<p>Public keys installed in every new pod of the account (docs/ssh.md).</p>}
      problem={problem}
      loading="Loading keys…"
      head={['Key']}
      empty="No SSH keys yet."
      rows={
        keys?.map((k, i) => {
          const [type, body, ...comment] = k.split(/\s+/);
          const label = `${type ?? ''} …${(body ?? '').slice(-12)} ${comment.join(' ')}`.trim();
          return {
            key: k,
            data: { 'ssh-key': String(i) },
            cells: [<code title={k}>{label}</code>],
            remove: { what: `key ${label}`, run: () => put(keys.filter((_, j) => j !== i)) },
          };
        }) ?? null
      }
      form={form}
      formTitle="Add a key"
      formLabel="Add an SSH key"
      submit="Add key"
      onSubmit={add}
    >
      <Field
        id="ssh-key"
        label="Public key"
        error={form.errors.keys}
        hint="One authorized_keys line: type, key, comment"
      >
        {(a) => (
          <textarea
            {...a}
            name="key"
            rows={3}
            spellcheck={false}
            value={form.values.key}
            onInput={(e) => form.set('key', e.currentTarget.value)}
          />
        )}
      </Field>
    </ResourcePage>
  );
}
