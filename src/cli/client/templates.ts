/** `gantry templates …`: pod and serverless templates (/v2/templates). */
import { UsageError } from '../usage-error.js';
import { deleteCommand, type Command, type Group } from './command.js';
import { envPairs, readBody } from './input.js';
import { fields, orDash, table } from './output.js';

interface Template {
  id: string;
  name: string;
  image: string;
  args: string;
  disk: number;
  ports: string[];
  env: Record<string, string>;
  serverless: boolean;
  public: boolean;
  category: string;
  createdAt: string;
}

const path = (id: string) => `/v2/templates/${encodeURIComponent(id)}`;
const kind = (t: Template) => `${t.serverless ? 'serverless' : 'pod'}${t.public ? ', public' : ''}`;

const list: Command = {
  name: 'list',
  summary: "the account's templates",
  options: { all: { type: 'boolean', description: 'also the public catalog templates' } },
  async run(ctx) {
    const { templates } = await ctx
      .api()
      .get<{ templates: Template[] }>('/v2/templates', ctx.bool('all') ? { includePublic: true } : {});
    ctx.out.show(templates, () =>
      templates.length === 0
        ? 'no templates (gantry templates create --help)'
        : table(
            ['ID', 'NAME', 'IMAGE', 'KIND', 'CATEGORY'],
            templates.map((t) => [t.id, t.name, t.image, kind(t), t.category]),
          ),
    );
  },
};

const get: Command = {
  name: 'get',
  args: 'ID',
  arity: [1, 1],
  summary: 'one template',
  async run(ctx) {
    const t = await ctx.api().get<Template>(path(ctx.args[0]!));
    ctx.out.show(t, () =>
      fields([
        ['id', t.id],
        ['name', t.name],
        ['image', t.image],
        ['args', orDash(t.args)],
        ['disk', `${t.disk} GB`],
        ['ports', t.ports.join(', ') || '-'],
        ['env', Object.keys(t.env).join(', ') || '-'],
        ['kind', kind(t)],
        ['category', t.category],
        ['created', t.createdAt],
      ]),
    );
  },
};

const create: Command = {
  name: 'create',
  summary: 'create a template',
  details: `Flags set the request's fields over --body (the whole POST /v2/templates request). Example:
  gantry templates create --name my-worker --image my-worker:dev --serverless`,
  options: {
    name: { type: 'string', value: 'NAME', description: 'its name (required unless in --body)' },
    image: { type: 'string', value: 'IMAGE', description: 'the container image (required unless in --body)' },
    args: { type: 'string', value: 'ARGS', description: 'the start command' },
    disk: { type: 'string', value: 'GB', description: 'container disk (default 20)' },
    port: { type: 'string', multiple: true, value: 'PORT/PROTO', description: 'a port, e.g. 8888/http' },
    env: { type: 'string', multiple: true, value: 'KEY=VALUE', description: 'an environment variable' },
    serverless: { type: 'boolean', description: 'a template for serverless endpoints' },
    category: { type: 'string', value: 'NVIDIA|AMD|CPU', description: 'its category (default NVIDIA)' },
    body: { type: 'string', value: 'JSON|@FILE|-', description: 'the request as JSON to start from' },
  },
  async run(ctx) {
    const body = await readBody(ctx.str('body'));
    const set = (key: string, value: unknown) => {
      if (value !== undefined) body[key] = value;
    };
    set('name', ctx.str('name'));
    set('image', ctx.str('image'));
    set('args', ctx.str('args'));
    set('disk', ctx.int('disk', 1));
    set('env', envPairs(ctx.list('env')));
    set('category', ctx.str('category'));
    if (ctx.list('port').length) set('ports', ctx.list('port'));
    if (ctx.bool('serverless')) set('serverless', true);
    if (body.name === undefined || body.image === undefined)
      throw new UsageError('gantry templates create needs --name and --image (see --help)');
    const t = await ctx.api().request<Template>('POST', '/v2/templates', { body });
    ctx.out.show(t, () => `created template ${t.id} (${t.name})`);
  },
};

const rm = deleteCommand('rm', 'delete a template (refused while a pod or an endpoint uses it)', path);

export const templates: Group = {
  name: 'templates',
  summary: 'pod and serverless templates',
  commands: [list, get, create, rm],
};
