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

export function TemplatesPage() {
  const { value, problem, reload } = usePoll(() => api<{ templates: Template[] }>('GET', '/v2/templates'), 10_000);
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
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
  const templates = value?.templates ?? null;
  return (
    <section>
      <hgroup class="page-head">
        <h1>Templates</h1>
      </hgroup>
      <ProblemNote problem={problem ?? listProblem} />
      {templates === null ? (
        <p aria-busy="true">Loading templates…</p>
      ) : (
        <ListTable head={['Name', 'Image', 'Disk', 'Ports', 'Kind', '']} empty="No templates yet.">
          {templates.map((t) => (
            <tr key={t.id} data-template={t.id}>
              <td>{t.name}</td>
              <td>
                <code>{t.image}</code>
              </td>
              <td>{t.disk} GB</td>
              <td>{t.ports.join(', ') || '—'}</td>
              <td>{t.serverless ? 'serverless' : 'pod'}</td>
              <td>
                <DeleteButton
                  what={`template ${t.name}`}
                  onProblem={setListProblem}
                  onDelete={async () => {
                    await api('DELETE', `/v2/templates/${encodeURIComponent(t.id)}`);
                    setListProblem(null);
                    reload();
                  }}
                />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      <article>
        <header>
          <h2>New template</h2>
        </header>
        <form onSubmit={create} noValidate aria-label="New template">
          <FormProblems messages={form.rest} />
          <div class="grid">
            <Field id="template-name" label="Name" error={form.errors.name}>
              {(a) => (
                <input {...a} name="name" value={v.name} onInput={(e) => form.set('name', e.currentTarget.value)} />
              )}
            </Field>
            <Field id="template-image" label="Image" error={form.errors.image}>
              {(a) => (
                <input
                  {...a}
                  name="image"
                  placeholder="ubuntu:22.04"
                  value={v.image}
                  onInput={(e) => form.set('image', e.currentTarget.value)}
                />
              )}
            </Field>
          </div>
          <div class="grid">
            <Field id="template-disk" label="Disk (GB)" error={form.errors.disk}>
              {(a) => (
                <input {...a} name="disk" value={v.disk} onInput={(e) => form.set('disk', e.currentTarget.value)} />
              )}
            </Field>
            <Field id="template-ports" label="Ports" error={form.errors.ports} hint="e.g. 8888/http, 22/tcp">
              {(a) => (
                <input {...a} name="ports" value={v.ports} onInput={(e) => form.set('ports', e.currentTarget.value)} />
              )}
            </Field>
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
          <WriteButton type="submit" busy={form.busy}>
            Create template
          </WriteButton>
        </form>
      </article>
    </section>
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
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
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
  const volumes = value?.networkVolumes ?? null;
  return (
    <section>
      <hgroup class="page-head">
        <h1>Network volumes</h1>
      </hgroup>
      <ProblemNote problem={problem ?? listProblem} />
      {volumes === null ? (
        <p aria-busy="true">Loading volumes…</p>
      ) : (
        <ListTable head={['Name', 'Size', 'Data center', 'Type', '']} empty="No network volumes yet.">
          {volumes.map((vol) => (
            <tr key={vol.id} data-volume={vol.id}>
              <td>{vol.name}</td>
              <td>{vol.size} GB</td>
              <td>{vol.dataCenter}</td>
              <td>{vol.type}</td>
              <td>
                <DeleteButton
                  what={`volume ${vol.name}`}
                  onProblem={setListProblem}
                  onDelete={async () => {
                    await api('DELETE', `/v2/network-volumes/${encodeURIComponent(vol.id)}`);
                    setListProblem(null);
                    reload();
                  }}
                />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      <article>
        <header>
          <h2>New network volume</h2>
        </header>
        <form onSubmit={create} noValidate aria-label="New network volume">
          <FormProblems messages={form.rest} />
          <div class="grid">
            <Field id="volume-name" label="Name" error={form.errors.name}>
              {(a) => (
                <input {...a} name="name" value={v.name} onInput={(e) => form.set('name', e.currentTarget.value)} />
              )}
            </Field>
            <Field id="volume-size" label="Size (GB)" error={form.errors.size} hint="10 to 4096; may only grow later">
              {(a) => (
                <input {...a} name="size" value={v.size} onInput={(e) => form.set('size', e.currentTarget.value)} />
              )}
            </Field>
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
          <WriteButton type="submit" busy={form.busy}>
            Create volume
          </WriteButton>
        </form>
      </article>
    </section>
  );
}

export function RegistriesPage() {
  const { value, problem, reload } = usePoll(
    () => api<{ registries: Array<{ id: string; name: string }> }>('GET', '/v2/registries'),
    10_000,
  );
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
  const form = useCreateForm({ name: '', username: '', password: '' }, ['name', 'username', 'password']);
  const v = form.values;
  const create = (e: Event) => {
    e.preventDefault();
    // the password goes to the API once and is cleared from the form whatever the answer
    const body = { name: v.name, username: v.username, password: v.password };
    form.set('password', '');
    void form.submit(() => api('POST', '/v2/registries', body), reload);
  };
  const registries = value?.registries ?? null;
  return (
    <section>
      <hgroup class="page-head">
        <h1>Registry credentials</h1>
      </hgroup>
      <p>
        Credentials pods and templates name as <code>registry</code> to pull private images. The server keeps them
        encrypted and never answers the username or password back.
      </p>
      <ProblemNote problem={problem ?? listProblem} />
      {registries === null ? (
        <p aria-busy="true">Loading credentials…</p>
      ) : (
        <ListTable head={['Name', 'Id', '']} empty="No registry credentials yet.">
          {registries.map((r) => (
            <tr key={r.id} data-registry={r.id}>
              <td>{r.name}</td>
              <td>
                <code>{r.id}</code>
              </td>
              <td>
                <DeleteButton
                  what={`credential ${r.name}`}
                  onProblem={setListProblem}
                  onDelete={async () => {
                    await api('DELETE', `/v2/registries/${encodeURIComponent(r.id)}`);
                    setListProblem(null);
                    reload();
                  }}
                />
              </td>
            </tr>
          ))}
        </ListTable>
      )}
      <article>
        <header>
          <h2>New registry credential</h2>
        </header>
        <form onSubmit={create} noValidate aria-label="New registry credential">
          <FormProblems messages={form.rest} />
          <div class="grid">
            <Field id="registry-name" label="Name" error={form.errors.name}>
              {(a) => (
                <input {...a} name="name" value={v.name} onInput={(e) => form.set('name', e.currentTarget.value)} />
              )}
            </Field>
            <Field id="registry-username" label="Username" error={form.errors.username}>
              {(a) => (
                <input
                  {...a}
                  name="username"
                  autocomplete="off"
                  value={v.username}
                  onInput={(e) => form.set('username', e.currentTarget.value)}
                />
              )}
            </Field>
            <Field id="registry-password" label="Password or token" error={form.errors.password}>
              {(a) => (
                <input
                  {...a}
                  name="password"
                  type="password"
                  autocomplete="new-password"
                  value={v.password}
                  onInput={(e) => form.set('password', e.currentTarget.value)}
                />
              )}
            </Field>
          </div>
          <WriteButton type="submit" busy={form.busy}>
            Store credential
          </WriteButton>
        </form>
      </article>
    </section>
  );
}

export function SshKeysPage() {
  const { value, problem, reload, setValue } = usePoll(
    () => api<{ keys: string[] }>('GET', '/v2/account/ssh-keys'),
    30_000,
  );
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
  const form = useCreateForm({ key: '' }, ['keys']);
  const keys = value?.keys ?? null;
  const put = async (next: string[]) =>
    setValue(await api<{ keys: string[] }>('PUT', '/v2/account/ssh-keys', { keys: next }));
  const add = (e: Event) => {
    e.preventDefault();
    void form.submit(() => put([...(keys ?? []), form.values.key.trim()]), reload);
  };
  return (
    <section>
      <hgroup class="page-head">
        <h1>SSH keys</h1>
      </hgroup>
      <p>Public keys installed in every new pod of the account (docs/ssh.md).</p>
      <ProblemNote problem={problem ?? listProblem} />
      {keys === null ? (
        <p aria-busy="true">Loading keys…</p>
      ) : (
        <ListTable head={['Key', '']} empty="No SSH keys yet.">
          {keys.map((k, i) => {
            const [type, body, ...comment] = k.split(/\s+/);
            const label = `${type ?? ''} …${(body ?? '').slice(-12)} ${comment.join(' ')}`.trim();
            return (
              <tr key={k} data-ssh-key={i}>
                <td>
                  <code title={k}>{label}</code>
                </td>
                <td>
                  <DeleteButton
                    what={`key ${label}`}
                    onProblem={setListProblem}
                    onDelete={async () => {
                      await put(keys.filter((_, j) => j !== i));
                      setListProblem(null);
                    }}
                  />
                </td>
              </tr>
            );
          })}
        </ListTable>
      )}
      <article>
        <header>
          <h2>Add a key</h2>
        </header>
        <form onSubmit={add} noValidate aria-label="Add an SSH key">
          <FormProblems messages={form.rest} />
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
          <WriteButton type="submit" busy={form.busy}>
            Add key
          </WriteButton>
        </form>
      </article>
    </section>
  );
}
