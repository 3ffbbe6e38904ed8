/**
 * The account's API keys (`/v2/account/api-keys`, a Gantry extension): the list (never a secret),
 * a create form whose answer shows the new key once with a copy button, and revoke after a
 * confirmation, which warns when the key is the one this tab is signed in with. Write controls
 * are disabled for a read key; the API's messages show at their field.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiProblem, fieldErrors } from '../api.js';
import { Field, ProblemNote, usePoll, useSession, WriteButton } from '../ui.js';

interface ApiKey {
  id: string;
  name: string;
  scope: 'read' | 'write';
  prefix: string;
  createdAt: string;
  /** To within a minute; null if never used. */
  lastUsedAt: string | null;
  current: boolean;
}

type CreatedKey = ApiKey & { key: string };

const asProblem = (err: unknown) => (err instanceof ApiProblem ? err : new ApiProblem(0, 'CLIENT', String(err)));

/**
 * The new key, shown this once: a read-only field, a copy button and the warning. It lives only
 * in this component's state and is dropped with "Done" or when the page is left.
 */
function NewKey({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [copy, setCopy] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => input.current?.select(), []);
  const copyKey = () => {
    const byHand = () => {
      // no clipboard API (a page served over plain http from another host): select it for the user
      input.current?.select();
      setCopy(document.execCommand('copy') ? 'copied' : 'failed');
    };
    if (navigator.clipboard === undefined) return byHand();
    navigator.clipboard.writeText(created.key).then(() => setCopy('copied'), byHand);
  };
  return (
    <article class="new-key" data-new-key={created.id} aria-labelledby="new-key-title">
      <header>
        <h2 id="new-key-title">
          New {created.scope} key “{created.name}”
        </h2>
      </header>
      <p role="alert">
        <strong>Copy this key now: you won’t see it again.</strong> The server keeps only a hash of it; if it is lost,
        revoke it and create another.
      </p>
      <div role="group" class="copy-field">
        <input
          ref={input}
          readOnly
          value={created.key}
          aria-label="New API key"
          spellcheck={false}
          autocomplete="off"
          onFocus={(e) => e.currentTarget.select()}
        />
        <button type="button" class="secondary" onClick={copyKey}>
          {copy === 'copied' ? 'Copied' : 'Copy'}
        </button>
      </div>
      {copy === 'failed' ? (
        <small class="problem">The browser refused to copy: select the key and copy it.</small>
      ) : null}
      <footer>
        <button type="button" onClick={onDone}>
          Done: I have copied it
        </button>
      </footer>
    </article>
  );
}

/** Revoke, then a second button to confirm; for the tab's own key the confirmation says it signs out. */
function RevokeButton({ apiKey, onRevoked }: { apiKey: ApiKey; onRevoked: (p: ApiProblem | null) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const what = `key ${apiKey.name}`;
  if (!confirming)
    return (
      <WriteButton class="secondary outline" label={`Revoke ${what}`} onClick={() => setConfirming(true)}>
        Revoke
      </WriteButton>
    );
  return (
    <span class="confirm">
      {apiKey.current ? (
        <small role="alert">This is the key you are signed in with: revoking it signs this tab out. </small>
      ) : null}
      <WriteButton
        class="contrast"
        busy={busy}
        label={`Confirm: revoke ${what}`}
        onClick={() => {
          setBusy(true);
          api('DELETE', `/v2/account/api-keys/${encodeURIComponent(apiKey.id)}`)
            .then(
              () => onRevoked(null),
              (err: unknown) => onRevoked(asProblem(err)),
            )
            .finally(() => {
              setBusy(false);
              setConfirming(false);
            });
        }}
      >
        Revoke
      </WriteButton>{' '}
      <button type="button" class="secondary outline" onClick={() => setConfirming(false)}>
        Cancel
      </button>
    </span>
  );
}

export function ApiKeysPage() {
  const { canWrite } = useSession();
  const { value, problem, reload } = usePoll(() => api<{ apiKeys: ApiKey[] }>('GET', '/v2/account/api-keys'), 15_000);
  const [listProblem, setListProblem] = useState<ApiProblem | null>(null);
  const [name, setName] = useState('');
  const [scope, setScope] = useState<'read' | 'write'>('read');
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [rest, setRest] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);

  const create = (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErrors({});
    setRest([]);
    api<CreatedKey>('POST', '/v2/account/api-keys', { name, scope })
      .then(
        (made) => {
          setCreated(made);
          setName('');
          setScope('read');
          reload();
        },
        (err: unknown) => {
          const { byField, rest: others } = fieldErrors(asProblem(err), ['name', 'scope']);
          setErrors(byField);
          setRest(others);
        },
      )
      .finally(() => setBusy(false));
  };

  const keys = value?.apiKeys ?? null;
  return (
    <section>
      <hgroup class="page-head">
        <h1>API keys</h1>
      </hgroup>
      <p>
        Keys of this account. A <code>read</code> key may only look; a <code>write</code> key may change everything the
        account owns, and create and revoke keys. The server stores a hash of each key, so a key is shown once, when it
        is created. A revoked key is refused from its next request.
      </p>
      {created ? <NewKey created={created} onDone={() => setCreated(null)} /> : null}
      <ProblemNote problem={problem ?? listProblem} />
      {keys === null ? (
        <p aria-busy="true">Loading keys…</p>
      ) : (
        <div class="table-wrap">
          <table class="striped">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scope</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col" />
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-api-key={k.id}>
                  <td>
                    {k.name}
                    {k.current ? <small class="this-key"> (this key)</small> : null}
                  </td>
                  <td>{k.scope}</td>
                  <td>
                    <code title={`id ${k.id}`}>{k.prefix}…</code>
                  </td>
                  <td>
                    <time dateTime={k.createdAt}>{new Date(k.createdAt).toLocaleString()}</time>
                  </td>
                  <td data-last-used>
                    {k.lastUsedAt ? (
                      <time dateTime={k.lastUsedAt}>{new Date(k.lastUsedAt).toLocaleString()}</time>
                    ) : (
                      'never'
                    )}
                  </td>
                  <td>
                    <RevokeButton
                      apiKey={k}
                      onRevoked={(p) => {
                        setListProblem(p);
                        reload();
                      }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <article>
        <header>
          <h2>Create an API key</h2>
        </header>
        <form onSubmit={create} noValidate aria-label="Create an API key">
          {rest.length > 0 ? (
            <p role="alert" class="problem">
              {rest.join('; ')}
            </p>
          ) : null}
          <div class="grid">
            <Field id="api-key-name" label="Name" error={errors.name} hint="What it is for, e.g. “CI deploys”">
              {(a) => (
                <input
                  {...a}
                  name="name"
                  autocomplete="off"
                  value={name}
                  onInput={(e) => setName(e.currentTarget.value)}
                />
              )}
            </Field>
            <Field id="api-key-scope" label="Scope" error={errors.scope}>
              {(a) => (
                <select
                  {...a}
                  name="scope"
                  value={scope}
                  onChange={(e) => setScope(e.currentTarget.value === 'write' ? 'write' : 'read')}
                >
                  <option value="read">read: look only</option>
                  <option value="write">write: change everything, manage keys</option>
                </select>
              )}
            </Field>
          </div>
          <WriteButton type="submit" busy={busy}>
            Create key
          </WriteButton>
          {canWrite ? null : <small> Only a write key can create or revoke keys.</small>}
        </form>
      </article>
    </section>
  );
}
