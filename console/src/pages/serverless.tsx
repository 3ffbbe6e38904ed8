import { useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, fieldErrors } from '../api.js';
import { navigate } from '../route.js';
import type { Endpoint, Template } from '../types.js';
import { Field, ProblemNote, TemplateSelect, usePoll, WriteButton } from '../ui.js';

const FIELDS = ['name', 'templateId', 'gpu', 'workers'];

function CreateEndpoint({ onCreated }: { onCreated: (e: Endpoint) => void }) {
  const [templates, setTemplates] = useState<Template[]>([]);
  const [pools, setPools] = useState<Array<{ id: string; displayName: string }>>([]);
  const [form, setForm] = useState({ name: '', templateId: '', pool: 'ADA_24', max: '1' });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [rest, setRest] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<{ templates: Template[] }>('GET', '/v2/templates').then(
      (r) => setTemplates(r.templates.filter((t) => t.serverless)),
      () => {},
    );
    api<{ pools: Array<{ id: string; displayName: string }> }>('GET', '/v2/catalog/pools').then(
      (r) => setPools(r.pools),
      () => {},
    );
  }, []);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const max = /^\d+$/.test(form.max) ? Number(form.max) : form.max;
      const created = await api<Endpoint>('POST', '/v2/serverless', {
        name: form.name,
        templateId: form.templateId,
        type: 'QUEUE',
        gpu: { pools: [form.pool] },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        workers: { min: 0, max },
      });
      setErrors({});
      setRest([]);
      onCreated(created);
    } catch (err) {
      if (!(err instanceof ApiProblem)) throw err;
      const f = fieldErrors(err, FIELDS);
      setErrors(f.byField);
      setRest(f.rest);
    } finally {
      setBusy(false);
    }
  };
  return (
    <details>
      <summary role="button" class="outline">
        New endpoint
      </summary>
      <form noValidate onSubmit={(e) => void submit(e)} aria-label="Create an endpoint">
        {rest.length ? (
          <p role="alert" class="problem">
            {rest.join('; ')}
          </p>
        ) : null}
        <div class="grid">
          <Field id="ep-name" label="Endpoint name" error={errors.name}>
            {(a) => (
              <input {...a} value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
            )}
          </Field>
          <TemplateSelect
            id="ep-template"
            label="Serverless template"
            error={errors.templateId}
            templates={templates}
            value={form.templateId}
            onChange={(templateId) => setForm({ ...form, templateId })}
          />
        </div>
        <div class="grid">
          <Field id="ep-pool" label="GPU pool" error={errors.gpu}>
            {(a) => (
              <select {...a} value={form.pool} onChange={(e) => setForm({ ...form, pool: e.currentTarget.value })}>
                {pools.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.displayName} ({p.id})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field id="ep-max" label="Max workers" error={errors.workers}>
            {(a) => (
              <input
                {...a}
                inputMode="numeric"
                value={form.max}
                onInput={(e) => setForm({ ...form, max: e.currentTarget.value })}
              />
            )}
          </Field>
        </div>
        <WriteButton type="submit" busy={busy}>
          Create endpoint
        </WriteButton>
      </form>
    </details>
  );
}

export function ServerlessPage() {
  const { value, problem, reload } = usePoll(() => api<{ endpoints: Endpoint[] }>('GET', '/v2/serverless'), 5000);
  return (
    <section>
      <h1>Serverless endpoints</h1>
      <CreateEndpoint
        onCreated={(e) => {
          reload();
          navigate(`/serverless/${encodeURIComponent(e.id)}`);
        }}
      />
      <ProblemNote problem={problem} />
      {value === null ? (
        <p aria-busy="true">Loading endpoints…</p>
      ) : value.endpoints.length === 0 ? (
        <p>No endpoints yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="striped">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Image</th>
                <th scope="col">GPU pools</th>
                <th scope="col">Workers (min–max)</th>
              </tr>
            </thead>
            <tbody>
              {value.endpoints.map((e) => (
                <tr key={e.id} data-endpoint={e.id}>
                  <td>
                    <a href={`#/serverless/${encodeURIComponent(e.id)}`}>{e.name}</a>
                  </td>
                  <td>
                    <code>{e.image}</code>
                  </td>
                  <td>{e.gpu?.pools.join(', ') ?? '—'}</td>
                  <td>
                    {e.workers.min}–{e.workers.max}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
