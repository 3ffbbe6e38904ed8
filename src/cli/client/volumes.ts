/** `gantry volumes …`: network volumes (/v2/network-volumes). */
import { UsageError } from '../usage-error.js';
import { deleteCommand, type Command, type Group } from './command.js';
import { readBody } from './input.js';
import { fields, table } from './output.js';

interface Volume {
  id: string;
  name: string;
  size: number;
  dataCenter: string;
  type: string;
}

const path = (id: string) => `/v2/network-volumes/${encodeURIComponent(id)}`;

const list: Command = {
  name: 'list',
  summary: "the account's network volumes",
  async run(ctx) {
    const { networkVolumes } = await ctx.api().get<{ networkVolumes: Volume[] }>('/v2/network-volumes');
    ctx.out.show(networkVolumes, () =>
      networkVolumes.length === 0
        ? 'no network volumes (gantry volumes create --help)'
        : table(
            ['ID', 'NAME', 'SIZE', 'DATA CENTER', 'TYPE'],
            networkVolumes.map((v) => [v.id, v.name, `${v.size} GB`, v.dataCenter, v.type]),
          ),
    );
  },
};

const get: Command = {
  name: 'get',
  args: 'ID',
  arity: [1, 1],
  summary: 'one network volume',
  async run(ctx) {
    const v = await ctx.api().get<Volume>(path(ctx.args[0]!));
    ctx.out.show(v, () =>
      fields([
        ['id', v.id],
        ['name', v.name],
        ['size', `${v.size} GB`],
        ['data center', v.dataCenter],
        ['type', v.type],
      ]),
    );
  },
};

const create: Command = {
  name: 'create',
  summary: 'create a network volume in a data center',
  details: 'Example:\n  gantry volumes create --name models --size 50 --data-center US-TX-3',
  options: {
    name: { type: 'string', value: 'NAME', description: 'its name' },
    size: { type: 'string', value: 'GB', description: 'its size, 10 to 4096 GB' },
    'data-center': { type: 'string', value: 'ID', description: 'its data center (GET /v2/catalog/datacenters)' },
    body: { type: 'string', value: 'JSON|@FILE|-', description: 'the request as JSON to start from' },
  },
  async run(ctx) {
    const body = await readBody(ctx.str('body'));
    const set = (key: string, value: unknown) => {
      if (value !== undefined) body[key] = value;
    };
    set('name', ctx.str('name'));
    set('size', ctx.int('size', 1));
    set('dataCenter', ctx.str('data-center'));
    if (body.name === undefined || body.size === undefined || (body.dataCenter ?? body.dataCenterId) === undefined)
      throw new UsageError('gantry volumes create needs --name, --size and --data-center (see --help)');
    const v = await ctx.api().request<Volume>('POST', '/v2/network-volumes', { body });
    ctx.out.show(v, () => `created volume ${v.id} (${v.name}, ${v.size} GB in ${v.dataCenter})`);
  },
};

const rm = deleteCommand('rm', 'delete a network volume and its data (refused while a pod mounts it)', path);

export const volumes: Group = { name: 'volumes', summary: 'network volumes', commands: [list, get, create, rm] };
