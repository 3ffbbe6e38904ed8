import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  api,
  ApiProblem,
  forgetKey,
  startEarly,
  storedKey,
  storeKey,
  takeEarly,
  whenUnauthorized,
  type Account,
} from './api.js';
import { Session } from './ui.js';
import { currentRoute, useRoute } from './route.js';
import { PodsPage, startPodsEarly } from './pages/pods.js';

const NAV: Array<[string, string]> = [
  ['/pods', 'Pods'],
  ['/serverless', 'Serverless'],
  ['/templates', 'Templates'],
  ['/volumes', 'Volumes'],
  ['/registries', 'Registries'],
  ['/ssh-keys', 'SSH keys'],
  ['/api-keys', 'API keys'],
  ['/usage', 'Usage'],
];

/**
 * A page whose code loads when it is first opened: the first screen (the pods list) carries only
 * its own code, so it is fetched and run sooner (docs/console.md "Speed"). The endpoint and usage
 * pages also bring the chart library.
 */
function lazyPage<P extends object>(load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  let loaded: FunctionComponent<P> | null = null;
  return function LazyPage(props: P) {
    const [Page, setPage] = useState<FunctionComponent<P> | null>(() => loaded);
    useEffect(() => {
      if (Page === null)
        void load().then((component) => {
          loaded = component;
          setPage(() => component);
        });
    }, []);
    return Page ? <Page {...props} /> : <p aria-busy="true">Loading…</p>;
  };
}

const PodPage = lazyPage(() => import('./pages/pod.js').then((m) => m.PodPage));
const CreatePodPage = lazyPage(() => import('./pages/pod-create.js').then((m) => m.CreatePodPage));
const ServerlessPage = lazyPage(() => import('./pages/serverless.js').then((m) => m.ServerlessPage));
const EndpointPage = lazyPage(() => import('./pages/endpoint.js').then((m) => m.EndpointPage));
const TemplatesPage = lazyPage(() => import('./pages/templates.js').then((m) => m.TemplatesPage));
const VolumesPage = lazyPage(() => import('./pages/volumes.js').then((m) => m.VolumesPage));
const RegistriesPage = lazyPage(() => import('./pages/registries.js').then((m) => m.RegistriesPage));
const SshKeysPage = lazyPage(() => import('./pages/ssh-keys.js').then((m) => m.SshKeysPage));
const ApiKeysPage = lazyPage(() => import('./pages/api-keys.js').then((m) => m.ApiKeysPage));
const UsagePage = lazyPage(() => import('./pages/usage.js').then((m) => m.UsagePage));

function Page({ route }: { route: string }) {
  const parts = route.split('/').filter(Boolean);
  if (parts[0] === 'pods' && parts[1] === 'new') return <CreatePodPage />;
  if (parts[0] === 'pods' && parts[1]) return <PodPage id={decodeURIComponent(parts[1])} />;
  if (parts[0] === 'pods' || parts.length === 0) return <PodsPage />;
  if (parts[0] === 'serverless' && parts[1]) return <EndpointPage id={decodeURIComponent(parts[1])} />;
  if (parts[0] === 'serverless') return <ServerlessPage />;
  if (parts[0] === 'templates') return <TemplatesPage />;
  if (parts[0] === 'volumes') return <VolumesPage />;
  if (parts[0] === 'registries') return <RegistriesPage />;
  if (parts[0] === 'ssh-keys') return <SshKeysPage />;
  if (parts[0] === 'api-keys') return <ApiKeysPage />;
  if (parts[0] === 'usage') return <UsagePage />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no page {route}. <a href="#/pods">Go to pods</a>.
      </p>
    </section>
  );
}

function SignIn({ onSignedIn, reason }: { onSignedIn: (account: Account) => void; reason: string | null }) {
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState<string | null>(reason);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    try {
      const account = await api<Account>('GET', '/v2/account', undefined, key.trim());
      storeKey(key.trim());
      setKey('');
      onSignedIn(account);
    } catch (err) {
      setProblem(err instanceof ApiProblem ? err.detail : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="container signin">
      <article>
        <header>
          <h1>Gantry console</h1>
        </header>
        <form onSubmit={(e) => void submit(e)}>
          <label for="api-key">
            API key
            <input
              id="api-key"
              name="api-key"
              type="password"
              autocomplete="off"
              spellcheck={false}
              required
              value={key}
              aria-invalid={problem ? 'true' : undefined}
              aria-describedby="api-key-help"
              onInput={(e) => setKey(e.currentTarget.value)}
            />
            <small id="api-key-help">
              {problem ?? 'Kept in this tab only (session storage) and sent in the Authorization header.'}
            </small>
          </label>
          <button type="submit" aria-busy={busy ? 'true' : undefined} disabled={busy}>
            Sign in
          </button>
        </form>
      </article>
    </main>
  );
}

/**
 * Starts the calls the first screen waits on before anything is rendered (main.tsx): the key
 * check and, on the pods page, its first page of pods, side by side.
 */
export function boot(): void {
  if (storedKey() === null) return;
  startEarly('/v2/account');
  if (currentRoute() === '/pods') startPodsEarly(startEarly);
}

export function App() {
  const [account, setAccount] = useState<Account | null>(null);
  const [checking, setChecking] = useState(storedKey() !== null);
  const [reason, setReason] = useState<string | null>(null);
  const route = useRoute();

  useEffect(() => {
    // may run at once, for a refusal of a call boot() started: the key is then forgotten
    whenUnauthorized(() => {
      forgetKey();
      setAccount(null);
      setReason('The server no longer accepts this key (revoked or unknown): sign in again.');
    });
    if (storedKey() === null) {
      setChecking(false);
      return;
    }
    takeEarly<Account>('/v2/account')
      .then(setAccount, () => forgetKey())
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <main class="container" aria-busy="true" />;
  if (account === null)
    return (
      <SignIn
        reason={reason}
        onSignedIn={(a) => {
          setReason(null);
          setAccount(a);
        }}
      />
    );

  const canWrite = account.key.scope === 'write';
  const signOut = () => {
    forgetKey();
    setAccount(null);
  };
  return (
    <Session.Provider value={{ account, canWrite }}>
      {/* the page address is the fragment, so this link moves the focus itself instead of to "#main" */}
      <a
        href="#main"
        class="skip-link"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="container topbar">
        <nav aria-label="Main">
          <ul>
            <li>
              <a href="#/pods" class="brand">
                <strong>Gantry</strong>
              </a>
            </li>
          </ul>
          <ul>
            {NAV.map(([path, label]) => (
              <li key={path}>
                <a href={`#${path}`} aria-current={route.startsWith(path) ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
          <ul>
            <li>
              <span class="who" title={`account ${account.id}, key ${account.key.id}`}>
                {account.name} · <span data-scope={account.key.scope}>{canWrite ? 'read/write' : 'read-only'}</span>
              </span>
            </li>
            <li>
              <button type="button" class="secondary outline" onClick={signOut}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <main class="container" id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </Session.Provider>
  );
}
