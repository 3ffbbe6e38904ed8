/**
 * The Docker runtime's section of the config, `runtime.docker`: its keys, defaults and environment
 * variables (composed into the `runtime` section by ../runtime-config.ts), what it decodes to once
 * config-runtime.ts has checked it against the rest, and the check that holds only when it runs.
 */
import { Type, type StaticDecode } from '@sinclair/typebox';
import { amount, choice, flag, nonEmpty, orNull, text } from '../../config-fields.js';
import { fail } from '../../config-values.js';
import type { RegistryPolicyConfig } from '../../domain/registry-policy.js';

/** Where the Docker runtime finds its engine when neither DOCKER_HOST nor runtime.docker.host says. */
export const DEFAULT_DOCKER_HOST = 'unix:///var/run/docker.sock';

const port = () => Type.Integer({ minimum: 1, maximum: 65_535 });

const RegistriesSchema = Type.Object(
  {
    allow: Type.Array(Type.String(), {
      default: [],
      description:
        'Registries allowed even on loopback or private addresses (`localhost:5000`, `*.corp.example`, `[::1]:5000`).',
      env: 'GANTRY_DOCKER_REGISTRIES_ALLOW',
      envList: true,
      mustBe: 'a list of registries (host, host:port, [ipv6]:port or *.domain)',
    }),
    only: flag(false, 'Allow nothing but `allow` (list docker.io to keep Docker Hub).'),
    private: choice(
      ['refuse', 'allow'],
      'refuse',
      'Registries on loopback, private, link-local or other non-public addresses (or names resolving there).',
    ),
  },
  {
    description:
      "Which registries tenants' images may be pulled from: by default any public one, and none on loopback, private or other non-public addresses (the engine would reach them from the host's network).",
  },
);

const DockerNetworksSchema = Type.Object(
  {
    pool: text(
      '10.224.0.0/12',
      'The IPv4 range account networks take their subnets from, one subnet per account (and per cluster) on each engine. It must not overlap the networks the host is on.',
      {
        env: 'GANTRY_DOCKER_NETWORK_POOL',
        pattern: '^\\d{1,3}(\\.\\d{1,3}){3}/\\d{1,2}$',
        mustBe: 'an IPv4 CIDR such as 10.224.0.0/12',
      },
    ),
    subnetPrefix: Type.Integer({
      minimum: 8,
      maximum: 29,
      default: 24,
      description:
        "Each account network's prefix length: /24 holds 253 instances of one account on one host, and a /12 pool 4,096 such networks.",
    }),
    emptyGraceMs: amount(
      600_000,
      "How long an account's network is kept once no instance uses it, so the account's next instance on the host does not wait for a new one.",
    ),
  },
  {
    description:
      "The networks instances live on: each account's instances on a network of their own on every engine, none shared between accounts (docs/security.md).",
  },
);

const DockerFirewallSchema = Type.Object(
  {
    mode: choice(
      ['install', 'off'],
      'install',
      "`install`: Gantry installs the container firewall (iptables) where the engine's bridges are, at start and whenever the engine comes back: containers reach the job API and the internet, not their host's other services, the metadata address or private ranges. It needs CAP_NET_ADMIN there; without it the server refuses to start when it serves the job API off loopback or has more than one account. `off`: nothing is installed, and containers reach every service of their host unless you firewall them yourself (docs/security.md lists the rules).",
      { env: 'GANTRY_DOCKER_FIREWALL' },
    ),
    command: Type.Array(Type.String(), {
      default: [],
      description:
        'A prefix for the `iptables-save` and `iptables-restore` the firewall runs: `[sudo, -n]`, or `[nsenter, --net=/run/netns/engine]` for an engine in another network namespace.',
      mustBe: 'a list of strings (a command and its arguments)',
    }),
    allow: Type.Array(
      Type.String({
        pattern: '^\\d{1,3}(\\.\\d{1,3}){3}(/\\d{1,2})?(:\\d{1,5})?$',
        mustBe: 'an IPv4 address or CIDR, with an optional :port',
      }),
      {
        default: [],
        description:
          'Private or host destinations containers may reach besides the job API: `10.0.0.5:5432`, `10.20.0.0/16` (every port).',
        mustBe: 'a list of IPv4 addresses or CIDRs, each with an optional :port',
      },
    ),
  },
  { description: 'What containers may reach on their host and beyond (docs/security.md).' },
);

export const DockerRuntimeSchema = Type.Object(
  {
    host: nonEmpty({
      default: DEFAULT_DOCKER_HOST,
      description: 'The engine: `unix:///path/docker.sock` or `tcp://host:port`.',
      env: 'DOCKER_HOST',
    }),
    namespace: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9-]{0,31}$',
        mustBe: '1 to 32 lowercase letters, digits and dashes, starting with a letter or digit',
        description:
          "Names and labels (`gantry.namespace`) everything this installation creates on the engine, so installations sharing one engine never touch each other's. Must stay the same across restarts (containers are adopted by it).",
        defaultText:
          '12 hex digits of the SHA-256 of the database URL (without credentials) and schema, or of the data dir',
      }),
    ),
    hostId: orNull(nonEmpty(), "The host's id in the catalog and on pods.", {
      defaultText: "the engine's name (its hostname)",
    }),
    dataCenterId: orNull(nonEmpty(), 'The data center the host is in.', {
      defaultText: "the catalog's first data center",
    }),
    cloud: choice(['SECURE', 'COMMUNITY'], 'SECURE', 'The cloud the host is offered in.'),
    publicIp: orNull(nonEmpty(), 'The address clients reach published ports at.', {
      defaultText: "bindIp when it is one address, else the engine's TCP host, else 127.0.0.1",
    }),
    bindIp: nonEmpty({ default: '0.0.0.0', description: 'The address published ports bind on.' }),
    portRange: Type.Tuple([port(), port()], {
      default: [20000, 29999],
      description: "Host ports handed to pods' and workers' ports, inclusive.",
      mustBe: '[first, last]: two ports from 1 to 65535, first <= last',
    }),
    diskGb: orNull(Type.Number({ minimum: 0 }), 'Disk to offer, GB.', {
      defaultText: "the free space under the engine's data root, at start",
    }),
    gpuMode: choice(
      ['auto', 'nvidia', 'env-only'],
      'auto',
      'How GPUs reach containers: `nvidia` (device requests; needs the NVIDIA Container Toolkit), `env-only` (only NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES), or `auto`: `nvidia` when the engine has the nvidia runtime or CDI GPU devices.',
    ),
    cpuFlavors: orNull(
      Type.Array(Type.String(), { mustBe: 'a list of CPU flavor ids' }),
      'CPU flavors the host serves.',
      { defaultText: 'every catalog flavor on a host without GPUs, none on a GPU host' },
    ),
    nvidiaSmi: nonEmpty({
      default: 'nvidia-smi',
      description: 'The nvidia-smi to run: a path, or a name found on PATH.',
    }),
    registries: RegistriesSchema,
    networks: DockerNetworksSchema,
    firewall: DockerFirewallSchema,
    allowMultipleAccountsOnHostNetwork: flag(
      false,
      "Let the Docker runtime serve more than one account while its serverless workers use the host's network (they do when the job URL they are given is on loopback): each worker then reaches everything listening on the host's loopback, so by default the server refuses to start with a second account, and refuses to create one, in that state. Serving the job API on a non-loopback address lifts the rule without this.",
      { env: 'GANTRY_DOCKER_HOST_NETWORK_MULTI_ACCOUNT' },
    ),
  },
  { description: 'The Docker runtime: the engine, and what of its host is configured rather than discovered.' },
);

/** The Docker runtime: the engine, and what of its host is configured rather than discovered. */
export type DockerRuntimeConfig = Omit<
  StaticDecode<typeof DockerRuntimeSchema>,
  'namespace' | 'portRange' | 'registries'
> & {
  /** @default 12 hex digits of the SHA-256 of the database URL and schema, or of the data dir */
  namespace: string;
  portRange: [number, number];
  registries: RegistryPolicyConfig;
};

/**
 * The engine's address, checked only when the Docker runtime runs (a DOCKER_HOST the process
 * runtime never reads must not stop it). `setting`: the key or environment variable it came from.
 */
export function checkEngineAddress(host: string, setting: string): void {
  if (!/^unix:\/\/\/./.test(host) && !/^(tcp|http):\/\/(\[[0-9a-fA-F:.]+\]|[^:/\s]+)(:\d+)?\/?$/.test(host))
    fail(`${setting} "${host}" must be unix:///path/docker.sock or tcp://host:port (TLS and ssh:// are not supported)`);
}
