/** The account's templates (docs/console.md): listed, created, deleted. */
import { api } from '../api.js';
import type { Template } from '../types.js';
import { usePoll } from '../ui.js';
import { numberOrText, splitList, TextField, useCreateForm } from './create-form.js';
import { deleteAt, ResourcePage } from './resource-page.js';

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
