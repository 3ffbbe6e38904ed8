/**
 * The shape every resource page shares (templates, network volumes, registry credentials, SSH
 * keys): a heading and intro, the live list with a delete button per row that asks first, and a
 * create form (create-form.tsx). Write controls are disabled for a read key.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiProblem } from '../api.js';
import { ProblemNote, WriteButton } from '../ui.js';
import { FormProblems } from './create-form.js';

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

/** Deletes the resource at `path`, then reloads the list. */
export const deleteAt = (path: string, reload: () => void) => async () => {
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
export function ResourcePage(props: {
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
