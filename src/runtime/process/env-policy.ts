/**
 * Which variables of a tenant's `env` the process runtime lets reach a process. An instance of the
 * process runtime is a process of the server's own user: a variable read by the dynamic loader, a
 * shell, an interpreter or a program a library spawns can make it run something other than the
 * mapped command — and from there read the secret key and the database. Such variables are
 * refused at the API (400 ENV_NOT_ALLOWED) and dropped again at spawn.
 *
 * A name must be a plain identifier, not a platform variable, and in no family below. A deny list
 * cannot know every program an operator maps; families are therefore denied by prefix wherever the
 * program reads a family, names are compared case-insensitively (npm folds case; a lowercase twin
 * is never needed), and an operator can narrow further per image (`images.<ref>.tenantEnv`).
 * The Docker runtime isolates env inside a container and does not use this list.
 *
 * Each rule is of one of two kinds. `code`: the variable changes which code runs (a loader, an
 * interpreter's start-up hook, a program spawned by name, a plug-in path, a cache of compiled code
 * loaded back) — refused on every process runtime. `setting`: an application setting that only
 * says where a program writes its files or fetches data, or how it behaves (`JUPYTER_ENABLE_LAB`,
 * `TMPDIR`, a proxy) — refused only when the runtime serves several accounts
 * (`runtime.process.allowMultipleAccounts`), where one tenant's files and downloads must not reach
 * another's; a single-account server lets its one tenant set them (docs/security.md).
 */

import type { EnvRefusal } from '../runtime.js';

/** `NAME=value` must survive `execve`, and shells drop anything else (`BASH_FUNC_f%%`, `A-B`). */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `code`: refused on every process runtime; `setting`: only on one serving several accounts. */
type RuleKind = 'code' | 'setting';

interface Rule {
  kind: RuleKind;
  /** exact names, upper case */
  names?: readonly string[];
  /** name prefixes, upper case */
  prefixes?: readonly string[];
  pattern?: RegExp;
  reason: string;
}

const RULES: readonly Rule[] = [
  {
    // glibc ld.so: LD_PRELOAD / LD_AUDIT / LD_LIBRARY_PATH load any shared object. The names are
    // glibc's own secure-mode list (sysdeps/generic/unsecvars.h): what it strips for setuid
    // programs because each loads code or data from a path the caller picks (gconv modules, NSS
    // host aliases, resolver options, message catalogs, locales, zoneinfo, malloc tracing),
    // plus GLIBC_TUNABLES (CVE-2023-4911) and macOS's DYLD_* twins. Those that load code (shared
    // objects, gconv modules, getconf's programs, the tunables) are `code`; the data files and
    // resolver settings below are `setting`.
    kind: 'code',
    prefixes: ['LD_', 'DYLD_'],
    names: ['GCONV_PATH', 'GETCONF_DIR', 'GLIBC_TUNABLES'],
    reason: 'the dynamic loader or the C library reads it to load code from a path it names',
  },
  {
    kind: 'setting',
    prefixes: ['MALLOC_'],
    names: [
      'HOSTALIASES',
      'LOCALDOMAIN',
      'LOCPATH',
      'NIS_PATH',
      'NLSPATH',
      'RESOLV_HOST_CONF',
      'RES_OPTIONS',
      'TMPDIR',
      'TZDIR',
    ],
    reason: 'the C library reads it to load files from, or write them to, a path it names',
  },
  {
    // Which program runs and where its dotfiles come from: PATH picks every command looked up by
    // name; HOME and XDG_* pick ~/.bashrc, ~/.gitconfig, ~/.npmrc, Python's user site (*.pth
    // lines run code); SHELL is what many libraries spawn commands through.
    kind: 'code',
    names: ['PATH', 'HOME', 'SHELL'],
    prefixes: ['XDG_'],
    reason: 'it decides which program runs or where a program reads its start-up files from',
  },
  {
    // bash, sh, zsh: BASH_ENV / ENV name a file a non-interactive / POSIX shell sources;
    // BASH_FUNC_* are exported functions; SHELLOPTS+PS4 run a command substitution under xtrace;
    // PS0-PS4 and PROMPT_COMMAND are expanded (commands included); IFS and CDPATH change how
    // scripts split words and resolve `cd`; ZDOTDIR and FPATH pick zsh's start-up and function files.
    kind: 'code',
    prefixes: ['BASH_'],
    names: [
      'ENV',
      'BASHOPTS',
      'SHELLOPTS',
      'PS0',
      'PS1',
      'PS2',
      'PS3',
      'PS4',
      'PROMPT_COMMAND',
      'IFS',
      'CDPATH',
      'GLOBIGNORE',
      'ZDOTDIR',
      'FPATH',
    ],
    reason: 'a shell reads it to run commands or source a file',
  },
  {
    // Node: NODE_OPTIONS=--import=data:… / --require runs code before the program; NODE_PATH
    // changes what `require` finds. UV_* tunes libuv and configures the `uv` Python tool
    // (UV_INDEX_URL installs packages from elsewhere). Package managers take their whole config
    // from the environment: npm_config_script_shell, YARN_YARN_PATH, COREPACK_NPM_REGISTRY
    // (which package manager binary is downloaded), PIP_INDEX_URL / PIP_CONFIG_FILE; Deno's
    // DENO_DIR is its compiled-module cache; BUN_OPTIONS takes `--preload`.
    kind: 'code',
    prefixes: ['NODE_', 'UV_', 'NPM_CONFIG_', 'YARN_', 'COREPACK_', 'PIP_', 'DENO_', 'BUN_'],
    reason: 'Node.js or a package manager reads it as options, module paths or where to fetch code from',
  },
  {
    // Python: PYTHONPATH / PYTHONHOME / PYTHONUSERBASE pick modules; PYTHONWARNINGS imports the
    // module a warning category names (with BROWSER set, `antigravity` runs a command);
    // PYTHONBREAKPOINT imports any callable; PYTHONSTARTUP runs a file. The flag-only members
    // (see SAFE below) are allowed.
    kind: 'code',
    prefixes: ['PYTHON'],
    reason: 'Python reads it to import modules or run code at start-up',
  },
  {
    // Perl (PERL5OPT=-Mmodule, PERL5DB runs debugger code, PERL5LIB), Ruby (RUBYOPT=-r,
    // RUBYLIB; GEM_* and BUNDLE_* — a Gemfile is Ruby code, BUNDLE_GEMFILE picks it), Lua
    // (LUA_INIT runs a chunk), Tcl/Tk (TCLLIBPATH, TCL_LIBRARY, TK_LIBRARY).
    kind: 'code',
    prefixes: ['PERL', 'RUBY', 'GEM_', 'BUNDLE', 'LUA_', 'TCL', 'TK_LIBRARY'],
    reason: 'an interpreter reads it to load modules or run code at start-up',
  },
  {
    // JVM: JAVA_TOOL_OPTIONS / _JAVA_OPTIONS / JDK_JAVA_OPTIONS take -javaagent; CLASSPATH;
    // JAVA_HOME / JAVA_OPTS, MAVEN_OPTS, GRADLE_OPTS and GRADLE_USER_HOME (init scripts) are
    // read by launcher scripts.
    kind: 'code',
    prefixes: ['JAVA_', 'MAVEN_', 'GRADLE_'],
    names: ['_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS', 'CLASSPATH'],
    reason: 'the JVM or its launcher scripts read it as options, agents or class paths',
  },
  {
    // Build tools a worker may run on start (pip building a C extension, make): CC and friends
    // are the programs run; gcc's -wrapper and -fplugin in *FLAGS run or load anything; make
    // reads MAKEFILES and MAKEFLAGS; CMake's *_COMPILER_LAUNCHER.
    kind: 'code',
    names: [
      'CC',
      'CXX',
      'CPP',
      'LD',
      'AR',
      'AS',
      'FC',
      'CFLAGS',
      'CXXFLAGS',
      'CPPFLAGS',
      'LDFLAGS',
      'LIBRARY_PATH',
      'MAKEFLAGS',
      'MAKEFILES',
      'MFLAGS',
      'GNUMAKEFLAGS',
    ],
    prefixes: ['CMAKE_'],
    reason: 'build tools run it as a program or read it as compiler options that can run programs',
  },
  {
    // Programs libraries spawn on the value's say: Python's webbrowser runs BROWSER; git, man,
    // less, editors and pagers run EDITOR, VISUAL, PAGER, MANPAGER; less runs LESSOPEN /
    // LESSCLOSE and takes `+!command` in LESS; SSH/sudo run *_ASKPASS; git runs GIT_SSH_COMMAND,
    // GIT_EXTERNAL_DIFF, core.fsmonitor from GIT_CONFIG_*, hooks from GIT_TEMPLATE_DIR.
    kind: 'code',
    prefixes: ['GIT_', 'LESS'],
    names: [
      'BROWSER',
      'EDITOR',
      'VISUAL',
      'PAGER',
      'MANPAGER',
      'MANOPT',
      'SSH_ASKPASS',
      'SSH_ASKPASS_REQUIRE',
      'SUDO_ASKPASS',
    ],
    reason: 'a library or tool runs its value as a command',
  },
  {
    // Plug-in loaders: OPENSSL_CONF loads engines and providers (shared objects), as do
    // OPENSSL_ENGINES / OPENSSL_MODULES; KRB5_CONFIG and SASL_PATH load plug-ins (libpq and
    // LDAP clients use them); GTK_MODULES, GIO_EXTRA_MODULES, GST_PLUGIN_* (GST_PLUGIN_SCANNER
    // is a program), Qt's plug-in paths; NCCL's *_PLUGIN names a shared object to load, and its
    // *_FILE names are files it writes (NCCL_DEBUG_FILE, NCCL_TOPO_DUMP_FILE) or parses;
    // ncurses parses terminal descriptions from TERMINFO / TERMCAP.
    kind: 'code',
    prefixes: ['OPENSSL_', 'KRB5', 'GST_PLUGIN', 'TERMINFO'],
    names: [
      'SASL_PATH',
      'GTK_MODULES',
      'GTK_PATH',
      'GIO_EXTRA_MODULES',
      'QT_PLUGIN_PATH',
      'QT_QPA_PLATFORM_PLUGIN_PATH',
      'TERMCAP',
    ],
    pattern: /^NCCL_\w*(PLUGIN|FILE)$/,
    reason: 'a library loads a plug-in or shared object from the path it names',
  },
  {
    // GPU and graphics drivers load code from paths in the environment: libcuda loads the shared
    // object CUDA_INJECTION64_PATH / CUDA_INJECTION32_PATH names into every CUDA process, and
    // keeps JIT-compiled kernels in CUDA_CACHE_PATH (read back and run); the Vulkan loader loads
    // drivers and layers from VK_ICD_FILENAMES, VK_LAYER_PATH, VK_ADD_LAYER_PATH,
    // VK_INSTANCE_LAYERS; the OpenCL ICD loader from OCL_ICD_VENDORS / OCL_ICD_FILENAMES; ROCm's
    // HSA runtime from HSA_TOOLS_LIB and rocprofiler from ROCP_TOOL_LIB; glvnd from
    // __EGL_VENDOR_LIBRARY_FILENAMES / __GLX_VENDOR_LIBRARY_NAME (NVIDIA's __GL_* include a
    // shader cache path); Mesa, libva and VDPAU from their *_DRIVERS_PATH and override names.
    kind: 'code',
    prefixes: ['CUDA_INJECTION', 'VK_', 'OCL_', 'HSA_TOOLS', '__EGL_', '__GL', 'LIBGL_', 'LIBVA_', 'VDPAU_'],
    names: ['CUDA_CACHE_PATH', 'ROCP_TOOL_LIB', 'EGL_DRIVERS_PATH', 'GBM_BACKENDS_PATH', 'MESA_LOADER_DRIVER_OVERRIDE'],
    reason: 'a GPU or graphics driver loads a shared object, layer or compiled kernel from the path it names',
  },
  {
    // Configuration that is code (or names files to write), and caches of compiled code loaded back: IPython runs
    // its profile's start-up scripts (IPYTHONDIR); Jupyter's config is Python, read from
    // JUPYTER_CONFIG_DIR / JUPYTER_CONFIG_PATH / JUPYTER_PATH; matplotlibrc in MPLCONFIGDIR picks
    // a backend by module name; TorchInductor and Triton (TRITON_* also name ptxas, libcuda and a
    // cache-manager class to import), torch.hub's hubconf.py under TORCH_HOME, torch extensions,
    // Numba's cache, PyTorch's kernel cache. curl and wget read options from CURL_HOME's .curlrc
    // and WGETRC, an output file among them: a download written over a script anywhere.
    kind: 'code',
    prefixes: ['TORCHINDUCTOR_', 'TORCHDYNAMO_', 'TRITON_'],
    names: [
      'CURL_HOME',
      'WGETRC',
      'IPYTHONDIR',
      'JUPYTER_CONFIG_DIR',
      'JUPYTER_CONFIG_PATH',
      'JUPYTER_PATH',
      'MPLCONFIGDIR',
      'NUMBA_CACHE_DIR',
      'PYTORCH_KERNEL_CACHE_PATH',
    ],
    pattern: /^TORCH\w*_(DIR|PATH|HOME|FILE|LIB|OUT)$/,
    reason: 'a program loads configuration that is code, or compiled code, from the path it names',
  },
  {
    // Where programs write files: Python's ssl, NSS and curl append TLS key material to
    // SSLKEYLOGFILE (any path the server's user can write: the database file included); Python's
    // tempfile takes TEMP / TMP as it does TMPDIR; Jupyter's other settings (JUPYTER_DATA_DIR and
    // JUPYTER_RUNTIME_DIR hold its connection files, JUPYTER_ALLOW_INSECURE_WRITES loosens their
    // modes; JUPYTER_ENABLE_LAB and the like are switches); bash writes its history to HISTFILE.
    kind: 'setting',
    prefixes: ['JUPYTER_'],
    names: ['SSLKEYLOGFILE', 'TEMP', 'TMP', 'HISTFILE'],
    reason: 'a program writes files to the path it names',
  },
  {
    // Code a program imports or runs from the environment's paths: transformers puts
    // HF_MODULES_CACHE (by default under HF_HOME) on sys.path for remote code; Conda's CONDA_* /
    // CONDARC pick channels, and its activation runs the scripts of CONDA_PREFIX.
    kind: 'code',
    prefixes: ['CONDA', 'MAMBA'],
    names: ['HF_HOME', 'HF_MODULES_CACHE'],
    reason: 'a program imports or runs code from the path or channel it names',
  },
  {
    // Where data is downloaded from: a proxy (HTTP_PROXY, https_proxy, ALL_PROXY, any *_PROXY, in
    // any case) sees and can answer every download of a pip, hub or model fetch; HF_ENDPOINT points
    // the Hugging Face hub elsewhere. An image that needs one sets it in its mapping's `env` instead.
    kind: 'setting',
    names: ['HF_ENDPOINT'],
    pattern: /_PROXY$/,
    reason: 'it changes where a program downloads packages or models from',
  },
  {
    // MPI and fabric component loaders: Open MPI, PMIx and PRRTE take every MCA parameter from
    // OMPI_MCA_* / PMIX_MCA_* / PRTE_MCA_* (mca_base_component_path loads components) and their
    // install prefix from OPAL_PREFIX; UCX loads modules from UCX_MODULE_DIR; libfabric providers
    // from FI_PROVIDER_PATH; hwloc plug-ins from HWLOC_PLUGINS_PATH.
    kind: 'code',
    prefixes: ['OMPI_', 'PMIX_', 'PRTE_', 'OPAL_', 'UCX_'],
    names: ['FI_PROVIDER_PATH', 'HWLOC_PLUGINS_PATH'],
    reason: 'an MPI or fabric library loads components from the path or names it gives',
  },
];

/** Members of a denied family that are switches or numbers only, and that templates commonly set. */
const SAFE = new Set([
  // a mode string read by libraries; nothing is loaded from it
  'NODE_ENV',
  // Python flags: unbuffered output, no .pyc, UTF-8 mode, hash seed, fault handler; and the
  // stdio codec name, which the `encodings` package resolves only among its own submodules
  'PYTHONUNBUFFERED',
  'PYTHONDONTWRITEBYTECODE',
  'PYTHONUTF8',
  'PYTHONHASHSEED',
  'PYTHONFAULTHANDLER',
  'PYTHONIOENCODING',
  // Jupyter's credentials (spec 2.2 rule 6: a tenant may pick its own password); values only
  'JUPYTER_PASSWORD',
  'JUPYTER_TOKEN',
  // only ever narrows what goes through a proxy
  'NO_PROXY',
]);

/**
 * Names the platform sets for an instance (src/runtime/instance-env.ts, process/instance-env.ts, the pod and worker specs). A tenant's
 * value would be overwritten, or, for the worker protocol's, would point the worker elsewhere:
 * refused rather than silently ignored.
 */
const PLATFORM_PREFIXES = ['GANTRY_', 'RUNPOD_WEBHOOK_', 'RUNPOD_TCP_PORT_'];
const PLATFORM_NAMES = new Set([
  'RUNPOD_POD_ID',
  'RUNPOD_POD_HOSTNAME',
  'RUNPOD_DC_ID',
  'RUNPOD_GPU_COUNT',
  'RUNPOD_CPU_COUNT',
  'RUNPOD_PUBLIC_IP',
  'RUNPOD_VOLUME_PATH',
  'RUNPOD_AI_API_KEY',
  'RUNPOD_ENDPOINT_ID',
  'RUNPOD_PING_INTERVAL',
  'CUDA_VISIBLE_DEVICES',
  'NVIDIA_VISIBLE_DEVICES',
]);

/** Whether the platform sets `name` itself for every instance. */
const isPlatformVariable = (name: string): boolean =>
  PLATFORM_NAMES.has(name) || PLATFORM_PREFIXES.some((p) => name.startsWith(p));

/**
 * Which rules apply: `all` on a process runtime serving several accounts, `code` (only what
 * changes which code runs) on one serving a single account.
 */
export type EnvScreen = 'all' | 'code';

/** Why `name` may not be set by a tenant whatever its image, or null when it may. */
export function deniedReason(name: string, screen: EnvScreen = 'all'): string | null {
  if (!IDENTIFIER.test(name)) return 'a variable name is letters, digits and "_", not starting with a digit';
  const upper = name.toUpperCase();
  if (SAFE.has(upper)) return null;
  for (const rule of RULES) {
    if (screen === 'code' && rule.kind !== 'code') continue;
    if (rule.names?.includes(upper) || rule.prefixes?.some((p) => upper.startsWith(p)) || rule.pattern?.test(upper))
      return rule.reason;
  }
  return null;
}

/** Whether `name` matches one of an image's `tenantEnv` patterns (`NAME`, or `PREFIX*`). */
const matchesAllowList = (name: string, patterns: readonly string[]): boolean =>
  patterns.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : name === p));

/** Why a tenant may not set `name` for an instance of an image whose `tenantEnv` is `allow`, or null. */
function refusalOf(name: string, allow: readonly string[] | undefined, screen: EnvScreen): string | null {
  if (isPlatformVariable(name)) return 'the platform sets it for every instance';
  const denied = deniedReason(name, screen);
  if (denied) return denied;
  if (allow && !matchesAllowList(name, allow))
    return `the image's tenantEnv allow-list (${allow.join(', ') || 'empty'}) does not include it`;
  return null;
}

/**
 * The first variable of a tenant's `env` the process runtime refuses, or null. `allow` is the
 * image's `tenantEnv` (undefined: any name the deny rules leave).
 */
export function tenantEnvRefusal(
  env: Record<string, string>,
  allow?: readonly string[],
  screen: EnvScreen = 'all',
): EnvRefusal | null {
  for (const name of Object.keys(env)) {
    const reason = refusalOf(name, allow, screen);
    if (reason) return { name, reason };
  }
  return null;
}

/**
 * The spawn-time screen, defence in depth behind the API's refusal: the tenant's env of an
 * instance (`InstanceSpec.env`) less every variable the API would refuse (stored before a rule,
 * or arriving by a path the API does not check), and the names dropped. The platform's own
 * variables are never in this map: they travel in `InstanceSpec.platformEnv`, which is not
 * screened, so an image's allow-list cannot strip a generated Jupyter password or a worker key.
 */
export function screenInstanceEnv(
  env: Record<string, string>,
  allow?: readonly string[],
  screen: EnvScreen = 'all',
): { env: Record<string, string>; dropped: string[] } {
  const kept: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (refusalOf(name, allow, screen) === null) kept[name] = value;
    else dropped.push(name);
  }
  return { env: kept, dropped };
}
