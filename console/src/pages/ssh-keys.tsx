/** The account's SSH public keys (docs/ssh.md), installed in every new pod: listed, added, removed. */
import { api } from '../api.js';
import { Field, usePoll } from '../ui.js';
import { useCreateForm } from './create-form.js';
import { ResourcePage } from './resource-page.js';

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
