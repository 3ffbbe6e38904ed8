/** The account's container registry credentials (docs/console.md): listed, stored, deleted; never shown back. */
import { api } from '../api.js';
import { usePoll } from '../ui.js';
import { TextField, useCreateForm } from './create-form.js';
import { deleteAt, ResourcePage } from './resource-page.js';

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
