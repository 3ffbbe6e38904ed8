/** The account's network volumes (docs/console.md): listed, created in a data center, deleted. */
import { api } from '../api.js';
import { Field, usePoll } from '../ui.js';
import { numberOrText, TextField, useCreateForm } from './create-form.js';
import { deleteAt, ResourcePage } from './resource-page.js';

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
