import { useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, fieldErrors } from '../api.js';
import { navigate } from '../route.js';
import type { GpuType, Pod, Template } from '../types.js';
import { Field, money, TemplateSelect, usePoll, useSession, WriteButton } from '../ui.js';

/** The request fields the form has an input for: the API's messages about them are shown there. */
const FIELDS = ['name', 'image', 'templateId', 'gpu', 'cloud', 'dataCenterIds', 'args', 'disk', 'ports', 'env'];

type Cloud = 'SECURE' | 'COMMUNITY';

interface FormState {
  source: 'image' | 'template';
  templateId: string;
  image: string;
  name: string;
  gpuId: string;
  gpuCount: string;
  cloud: Cloud;
  dataCenterId: string;
  args: string;
  disk: string;
  ports: string;
  env: string;
  startSsh: boolean;
}

const initial: FormState = {
  source: 'image',
  templateId: '',
  image: '',
  name: '',
  gpuId: '',
  gpuCount: '1',
  cloud: 'SECURE',
  dataCenterId: '',
  args: '',
  disk: '',
  ports: '',
  env: '',
  startSsh: true,
};

/** A number when the text is one (the API checks the range); the text itself otherwise, for the API to name. */
const numberOrText = (text: string): number | string => (/^-?\d+$/.test(text.trim()) ? Number(text.trim()) : text);

function requestBody(f: FormState): { body: Record<string, unknown>; local: Record<string, string> } {
  const local: Record<string, string> = {};
  const env: Record<string, string> = {};
  for (const [i, raw] of f.env.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) local.env = `line ${i + 1}: write KEY=VALUE`;
    else env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  const ports = f.ports
    .split(/[\s,]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  const body: Record<string, unknown> = {
    name: f.name,
    cloud: f.cloud,
    startSsh: f.startSsh,
    ...(f.source === 'template' ? { templateId: f.templateId } : { image: f.image }),
    ...(f.gpuId ? { gpu: { id: f.gpuId, count: numberOrText(f.gpuCount || '1') } } : {}),
    ...(f.dataCenterId ? { dataCenterIds: [f.dataCenterId] } : {}),
    ...(f.args.trim() ? { args: f.args } : {}),
    ...(f.disk.trim() ? { disk: numberOrText(f.disk) } : {}),
    ...(ports.length ? { ports } : {}),
    ...(Object.keys(env).length ? { env } : {}),
  };
  if (!f.gpuId) local.gpu = 'Pick a GPU type.';
  if (f.source === 'template' && !f.templateId) local.templateId = 'Pick a template.';
  return { body, local };
}

function GpuPicker(props: {
  gpus: GpuType[] | null;
  cloud: Cloud;
  count: number;
  selected: string;
  error: string | undefined;
  onSelect: (id: string) => void;
}) {
  const price = (g: GpuType) => (props.cloud === 'SECURE' ? g.price.secure : g.price.community);
  const gpus = [...(props.gpus ?? [])].sort(
    (a, b) => Number(b.availability !== 'NONE') - Number(a.availability !== 'NONE') || price(a) - price(b),
  );
  return (
    <fieldset aria-describedby={props.error ? 'gpu-error' : undefined} aria-invalid={props.error ? 'true' : undefined}>
      <legend>GPU type</legend>
      {props.gpus === null ? (
        <p aria-busy="true">Loading the catalog…</p>
      ) : (
        <div class="table-wrap">
          <table class="gpu-picker">
            <thead>
              <tr>
                <th scope="col">GPU</th>
                <th scope="col">Price/hr</th>
                <th scope="col">Stock</th>
                <th scope="col">Data centers</th>
                <th scope="col">CUDA</th>
              </tr>
            </thead>
            <tbody>
              {gpus.map((g) => {
                const none = g.availability === 'NONE';
                return (
                  <tr key={g.id} class={props.selected === g.id ? 'selected' : undefined} data-gpu={g.id}>
                    <td>
                      <label>
                        <input
                          type="radio"
                          name="gpu"
                          value={g.id}
                          checked={props.selected === g.id}
                          disabled={none}
                          onChange={() => props.onSelect(g.id)}
                        />
                        {g.name} <small>{g.memory} GB</small>
                      </label>
                    </td>
                    <td>
                      {money(price(g) * props.count)}
                      {props.count > 1 ? <small> ({money(price(g))} each)</small> : null}
                    </td>
                    <td>
                      <span class={`avail avail-${(g.availability ?? 'NONE').toLowerCase()}`}>
                        {g.availability ?? '—'}
                      </span>
                      <small> up to {props.cloud === 'SECURE' ? g.maxCount.secure : g.maxCount.community}</small>
                    </td>
                    <td>{(g.dataCenters ?? []).map((d) => `${d.id} (${d.availability})`).join(', ') || '—'}</td>
                    <td>
                      {(g.cudaVersions ?? []).map((c) => (
                        <span key={c.version} class={c.available ? 'cuda' : 'cuda cuda-full'}>
                          {c.version}{' '}
                        </span>
                      ))}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {props.error ? (
        <small id="gpu-error" class="field-error" data-field-error="gpu">
          {props.error}
        </small>
      ) : null}
    </fieldset>
  );
}

export function CreatePodPage() {
  const { canWrite } = useSession();
  const [form, setForm] = useState<FormState>(initial);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formProblem, setFormProblem] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof FormState>(k: K, v: FormState[K]) => setForm((f) => ({ ...f, [k]: v }));

  const count = Math.max(1, Number.parseInt(form.gpuCount, 10) || 1);
  const { value: catalog } = usePoll(
    () =>
      api<{ gpus: GpuType[] }>(
        'GET',
        `/v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=${form.cloud}&count=${count}`,
      ),
    15000,
    [form.cloud, count],
  );
  const [templates, setTemplates] = useState<Template[]>([]);
  useEffect(() => {
    Promise.all([
      api<{ templates: Template[] }>('GET', '/v2/templates'),
      api<{ templates: Template[] }>('GET', '/v2/catalog/templates'),
    ]).then(
      ([own, shipped]) => {
        const seen = new Set<string>();
        setTemplates(
          [...own.templates, ...shipped.templates].filter((t) => !t.serverless && !seen.has(t.id) && seen.add(t.id)),
        );
      },
      () => setTemplates([]),
    );
  }, []);
  const gpu = catalog?.gpus.find((g) => g.id === form.gpuId);

  const submit = async (e: Event) => {
    e.preventDefault();
    const { body, local } = requestBody(form);
    setFormProblem([]);
    if (Object.keys(local).length > 0) {
      setErrors(local);
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      const pod = await api<Pod>('POST', '/v2/pods', body);
      navigate(`/pods/${encodeURIComponent(pod.id)}`);
    } catch (err) {
      if (!(err instanceof ApiProblem)) throw err;
      const { byField, rest } = fieldErrors(err, FIELDS);
      setErrors(byField);
      setFormProblem(rest);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <nav aria-label="breadcrumb">
        <ul>
          <li>
            <a href="#/pods">Pods</a>
          </li>
          <li>Create</li>
        </ul>
      </nav>
      <h1>Create a pod</h1>
      <form noValidate onSubmit={(e) => void submit(e)} aria-label="Create a pod">
        {formProblem.length > 0 ? (
          <div role="alert" class="problem">
            {formProblem.map((p) => (
              <p key={p}>{p}</p>
            ))}
          </div>
        ) : null}
        <Field id="pod-name" label="Name" error={errors.name}>
          {(a) => (
            <input {...a} name="name" value={form.name} onInput={(e) => set('name', e.currentTarget.value)} required />
          )}
        </Field>
        <fieldset>
          <legend>Start from</legend>
          <label>
            <input
              type="radio"
              name="source"
              checked={form.source === 'image'}
              onChange={() => set('source', 'image')}
            />
            an image
          </label>
          <label>
            <input
              type="radio"
              name="source"
              checked={form.source === 'template'}
              onChange={() => set('source', 'template')}
            />
            a template
          </label>
        </fieldset>
        {form.source === 'image' ? (
          <Field
            id="pod-image"
            label="Image"
            error={errors.image}
            hint="e.g. pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime"
          >
            {(a) => (
              <input {...a} name="image" value={form.image} onInput={(e) => set('image', e.currentTarget.value)} />
            )}
          </Field>
        ) : (
          <TemplateSelect
            id="pod-template"
            label="Template"
            error={errors.templateId}
            templates={templates}
            value={form.templateId}
            onChange={(id) => set('templateId', id)}
          />
        )}
        <div class="grid">
          <Field id="pod-cloud" label="Cloud" error={errors.cloud}>
            {(a) => (
              <select
                {...a}
                name="cloud"
                value={form.cloud}
                onChange={(e) => set('cloud', e.currentTarget.value as Cloud)}
              >
                <option value="SECURE">Secure</option>
                <option value="COMMUNITY">Community</option>
              </select>
            )}
          </Field>
          <Field id="pod-gpu-count" label="GPUs" error={undefined}>
            {(a) => (
              <input
                {...a}
                name="gpuCount"
                type="number"
                min={1}
                value={form.gpuCount}
                onInput={(e) => set('gpuCount', e.currentTarget.value)}
              />
            )}
          </Field>
          <Field id="pod-datacenter" label="Data center" error={errors.dataCenterIds}>
            {(a) => (
              <select
                {...a}
                name="dataCenterId"
                value={form.dataCenterId}
                onChange={(e) => set('dataCenterId', e.currentTarget.value)}
              >
                <option value="">Any with stock</option>
                {(gpu?.dataCenters ?? []).map((d) => (
                  <option key={d.id} value={d.id}>
                    {d.name} ({d.availability})
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <GpuPicker
          gpus={catalog?.gpus ?? null}
          cloud={form.cloud}
          count={count}
          selected={form.gpuId}
          error={errors.gpu}
          onSelect={(id) => setForm((f) => ({ ...f, gpuId: id, dataCenterId: '' }))}
        />
        <details open={Boolean(errors.args || errors.disk || errors.ports || errors.env)}>
          <summary>Command, disk, ports and environment</summary>
          <Field id="pod-args" label="Command (args)" error={errors.args}>
            {(a) => <input {...a} name="args" value={form.args} onInput={(e) => set('args', e.currentTarget.value)} />}
          </Field>
          <div class="grid">
            <Field
              id="pod-disk"
              label="Container disk (GB)"
              error={errors.disk}
              hint="default: the template's, else 20"
            >
              {(a) => (
                <input
                  {...a}
                  name="disk"
                  inputMode="numeric"
                  value={form.disk}
                  onInput={(e) => set('disk', e.currentTarget.value)}
                />
              )}
            </Field>
            <Field id="pod-ports" label="Ports" error={errors.ports} hint="e.g. 8888/http, 22/tcp">
              {(a) => (
                <input {...a} name="ports" value={form.ports} onInput={(e) => set('ports', e.currentTarget.value)} />
              )}
            </Field>
          </div>
          <Field id="pod-env" label="Environment (KEY=VALUE per line)" error={errors.env}>
            {(a) => (
              <textarea
                {...a}
                name="env"
                rows={3}
                value={form.env}
                onInput={(e) => set('env', e.currentTarget.value)}
              />
            )}
          </Field>
          <label>
            <input
              type="checkbox"
              role="switch"
              name="startSsh"
              checked={form.startSsh}
              onChange={(e) => set('startSsh', e.currentTarget.checked)}
            />
            SSH access through the proxy
          </label>
        </details>
        <WriteButton type="submit" busy={busy} disabled={!canWrite}>
          Create pod
          {gpu ? ` · ${money((form.cloud === 'SECURE' ? gpu.price.secure : gpu.price.community) * count)}/hr` : ''}
        </WriteButton>
      </form>
    </section>
  );
}
