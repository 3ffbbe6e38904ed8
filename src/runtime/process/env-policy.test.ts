import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deniedReason, screenInstanceEnv, tenantEnvRefusal } from './env-policy.js';

test('variables that make a process load or run something else are denied, by family', () => {
  for (const name of [
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'LD_AUDIT',
    'DYLD_INSERT_LIBRARIES',
    'GCONV_PATH',
    'GLIBC_TUNABLES',
    'MALLOC_CHECK_',
    'HOSTALIASES',
    'RES_OPTIONS',
    'LOCALDOMAIN',
    'NLSPATH',
    'LOCPATH',
    'TZDIR',
    'TMPDIR',
    'PATH',
    'HOME',
    'SHELL',
    'XDG_CONFIG_HOME',
    'BASH_ENV',
    'ENV',
    'BASH_FUNC_x',
    'SHELLOPTS',
    'BASHOPTS',
    'PS4',
    'PROMPT_COMMAND',
    'IFS',
    'CDPATH',
    'ZDOTDIR',
    'NODE_OPTIONS',
    'NODE_PATH',
    'UV_THREADPOOL_SIZE',
    'npm_config_script_shell',
    'NPM_CONFIG_USERCONFIG',
    'YARN_RC_FILENAME',
    'COREPACK_NPM_REGISTRY',
    'PIP_INDEX_URL',
    'PYTHONPATH',
    'PYTHONWARNINGS',
    'PYTHONSTARTUP',
    'PYTHONBREAKPOINT',
    'PYTHONHOME',
    'PERL5OPT',
    'PERL5LIB',
    'RUBYOPT',
    'GEM_HOME',
    'BUNDLE_GEMFILE',
    'JAVA_TOOL_OPTIONS',
    '_JAVA_OPTIONS',
    'JDK_JAVA_OPTIONS',
    'CLASSPATH',
    'LUA_INIT',
    'TCLLIBPATH',
    'GIT_SSH_COMMAND',
    'GIT_CONFIG_COUNT',
    'OPENSSL_CONF',
    'BROWSER',
    'EDITOR',
    'VISUAL',
    'PAGER',
    'LESSOPEN',
    'LESSCLOSE',
    'LESS',
    'TERMINFO',
    'TERMINFO_DIRS',
    'SSH_ASKPASS',
    'CC',
    'CFLAGS',
    'MAKEFILES',
    'NCCL_NET_PLUGIN',
    'GTK_MODULES',
  ]) {
    assert.notEqual(deniedReason(name), null, `${name} must be denied`);
  }
});

test('variables that make a GPU or graphics driver load a shared object, layer or compiled kernel are denied', () => {
  for (const name of [
    'CUDA_INJECTION64_PATH',
    'CUDA_INJECTION32_PATH',
    'CUDA_CACHE_PATH',
    'VK_ICD_FILENAMES',
    'VK_LAYER_PATH',
    'VK_ADD_LAYER_PATH',
    'VK_INSTANCE_LAYERS',
    'VK_DRIVER_FILES',
    'OCL_ICD_VENDORS',
    'OCL_ICD_FILENAMES',
    'HSA_TOOLS_LIB',
    'HSA_TOOLS_REPORT_LOAD_FAILURE',
    'ROCP_TOOL_LIB',
    '__EGL_VENDOR_LIBRARY_FILENAMES',
    '__EGL_VENDOR_LIBRARY_DIRS',
    '__GLX_VENDOR_LIBRARY_NAME',
    '__GL_SHADER_DISK_CACHE_PATH',
    'LIBGL_DRIVERS_PATH',
    'LIBVA_DRIVERS_PATH',
    'VDPAU_DRIVER_PATH',
    'EGL_DRIVERS_PATH',
    'GBM_BACKENDS_PATH',
  ])
    assert.match(deniedReason(name) ?? '', /GPU or graphics driver/, name);
});

test('variables naming a file a program writes, or a folder it loads configuration or compiled code from, are denied', () => {
  for (const name of [
    'SSLKEYLOGFILE',
    'sslkeylogfile',
    'TEMP',
    'TMP',
    'tmp',
    'IPYTHONDIR',
    'JUPYTER_CONFIG_DIR',
    'JUPYTER_PATH',
    'JUPYTER_DATA_DIR',
    'JUPYTER_RUNTIME_DIR',
    'JUPYTER_CONFIG_PATH',
    'JUPYTER_ALLOW_INSECURE_WRITES',
    'MPLCONFIGDIR',
    'CURL_HOME',
    'WGETRC',
    'HISTFILE',
    'NUMBA_CACHE_DIR',
    'PYTORCH_KERNEL_CACHE_PATH',
    'TORCH_HOME',
    'TORCH_EXTENSIONS_DIR',
    'TORCH_COMPILE_DEBUG_DIR',
    'TORCH_LOGS_OUT',
    'TORCHELASTIC_ERROR_FILE',
    'TORCHINDUCTOR_CACHE_DIR',
    'TORCHINDUCTOR_FX_GRAPH_CACHE',
    'TRITON_CACHE_DIR',
    'TRITON_LIBCUDA_PATH',
    'TRITON_PTXAS_PATH',
    'TRITON_CACHE_MANAGER',
  ])
    assert.match(
      deniedReason(name) ?? '',
      /writes files to the path|loads configuration that is code, or compiled code, from/,
      name,
    );
});

test('proxies and other variables that change where code, packages or models are downloaded from are denied, in any case', () => {
  for (const name of [
    'HTTP_PROXY',
    'http_proxy',
    'HTTPS_PROXY',
    'https_proxy',
    'ALL_PROXY',
    'all_proxy',
    'FTP_PROXY',
    'Https_Proxy',
    'HF_ENDPOINT',
    'HF_HOME',
    'HF_MODULES_CACHE',
    'CONDARC',
    'CONDA_PKGS_DIRS',
    'MAMBA_ROOT_PREFIX',
  ])
    assert.match(
      deniedReason(name) ?? '',
      /where a program downloads packages or models from|imports or runs code from the path or channel/,
      name,
    );
});

test('variables with which MPI, fabric and NCCL libraries load components or write files are denied', () => {
  for (const name of [
    'OMPI_MCA_mca_base_component_path',
    'PMIX_MCA_mca_base_component_path',
    'PRTE_MCA_x',
    'OPAL_PREFIX',
    'UCX_MODULE_DIR',
    'FI_PROVIDER_PATH',
    'HWLOC_PLUGINS_PATH',
    'NCCL_TUNER_PLUGIN',
    'NCCL_DEBUG_FILE',
    'NCCL_TOPO_DUMP_FILE',
  ])
    assert.notEqual(deniedReason(name), null, name);
});

test('a denied name is denied whatever its case', () => {
  assert.notEqual(deniedReason('node_options'), null);
  assert.notEqual(deniedReason('Ld_Preload'), null);
});

test('ordinary names, and the flag-only members of denied families that templates set, are allowed', () => {
  for (const name of [
    'MODEL_NAME',
    'HF_TOKEN',
    'HF_HUB_ENABLE_HF_TRANSFER',
    'LOG_LEVEL',
    'PORT',
    'TZ',
    'LANG',
    'LC_ALL',
    'NODE_ENV',
    'PYTHONUNBUFFERED',
    'PYTHONDONTWRITEBYTECODE',
    'PYTHONIOENCODING',
    'PUBLIC_KEY',
    'JUPYTER_PASSWORD',
    'jupyter_password',
    'JUPYTER_TOKEN',
    'NCCL_DEBUG',
    'NCCL_P2P_DISABLE',
    'SSL_CERT_FILE',
    'NO_PROXY',
    'no_proxy',
    'RUNPOD_DEBUG_LEVEL',
    'CUDA_LAUNCH_BLOCKING',
    'PYTORCH_CUDA_ALLOC_CONF',
    'TORCH_CUDA_ARCH_LIST',
    'TORCH_NCCL_ASYNC_ERROR_HANDLING',
    'NUMBA_NUM_THREADS',
    'OMP_NUM_THREADS',
    'TEMPERATURE',
    'TMP_SUFFIX',
  ]) {
    assert.equal(deniedReason(name), null, `${name} must be allowed`);
  }
});

test('a name that is not a plain identifier is denied', () => {
  for (const name of ['BASH_FUNC_f%%', 'A-B', '1ABC', 'A=B', '', 'A B', 'Ä'])
    assert.notEqual(deniedReason(name), null, JSON.stringify(name));
});

test('a tenant may not set the variables the platform sets for an instance', () => {
  for (const name of [
    'GANTRY_INSTANCE_ID',
    'RUNPOD_AI_API_KEY',
    'RUNPOD_WEBHOOK_GET_JOB',
    'RUNPOD_POD_ID',
    'CUDA_VISIBLE_DEVICES',
    'RUNPOD_TCP_PORT_22',
  ])
    assert.equal(tenantEnvRefusal({ [name]: 'x' })?.name, name);
});

test('the refusal names the first refused variable and says why', () => {
  assert.deepEqual(tenantEnvRefusal({ OK: '1', NODE_OPTIONS: '--require=/tmp/evil.cjs' }), {
    name: 'NODE_OPTIONS',
    reason: 'Node.js or a package manager reads it as options, module paths or where to fetch code from',
  });
  assert.equal(tenantEnvRefusal({ OK: '1' }), null);
});

test("an image's tenantEnv narrows the names a tenant may set but never re-allows a denied one", () => {
  const allow = ['MODEL_*', 'LOG_LEVEL', 'NODE_OPTIONS'];
  assert.equal(tenantEnvRefusal({ MODEL_NAME: 'x', LOG_LEVEL: 'debug' }, allow), null);
  assert.equal(tenantEnvRefusal({ HF_TOKEN: 'x' }, allow)?.name, 'HF_TOKEN');
  assert.match(
    tenantEnvRefusal({ HF_TOKEN: 'x' }, allow)!.reason,
    /tenantEnv allow-list \(MODEL_\*, LOG_LEVEL, NODE_OPTIONS\)/,
  );
  assert.equal(tenantEnvRefusal({ NODE_OPTIONS: '--inspect' }, allow)?.name, 'NODE_OPTIONS');
  assert.equal(tenantEnvRefusal({ LOG_LEVELS: 'x' }, allow)?.name, 'LOG_LEVELS');
});

test('the spawn-time screen drops from tenant env every variable the API would refuse, platform names included', () => {
  const { env, dropped } = screenInstanceEnv(
    {
      LD_PRELOAD: '/tmp/x.so',
      PATH: '/tmp',
      MODEL: 'm',
      OTHER: 'o',
      RUNPOD_WEBHOOK_GET_JOB: 'http://x',
      RUNPOD_AI_API_KEY: 'k',
      'BAD-NAME': '1',
    },
    ['MODEL'],
  );
  assert.deepEqual(env, { MODEL: 'm' });
  assert.deepEqual(dropped, ['LD_PRELOAD', 'PATH', 'OTHER', 'RUNPOD_WEBHOOK_GET_JOB', 'RUNPOD_AI_API_KEY', 'BAD-NAME']);
});

test("a tenant's own JUPYTER_PASSWORD or PUBLIC_KEY is tenant env: kept without an allow-list, dropped by one that leaves it out", () => {
  const tenant = { JUPYTER_PASSWORD: 'mine', PUBLIC_KEY: 'ssh-ed25519 AAAA me', MODEL_NAME: 'm' };
  assert.deepEqual(screenInstanceEnv(tenant).env, tenant);
  assert.deepEqual(screenInstanceEnv(tenant, ['MODEL_*']), {
    env: { MODEL_NAME: 'm' },
    dropped: ['JUPYTER_PASSWORD', 'PUBLIC_KEY'],
  });
});

test('on a server of one account only what changes which code runs is refused; application settings pass', () => {
  for (const name of [
    'LD_PRELOAD',
    'GCONV_PATH',
    'PATH',
    'HOME',
    'BASH_ENV',
    'NODE_OPTIONS',
    'PIP_INDEX_URL',
    'PYTHONSTARTUP',
    'PERL5OPT',
    'JAVA_TOOL_OPTIONS',
    'CC',
    'GIT_SSH_COMMAND',
    'OPENSSL_CONF',
    'CUDA_INJECTION64_PATH',
    'IPYTHONDIR',
    'JUPYTER_CONFIG_DIR',
    'JUPYTER_PATH',
    'MPLCONFIGDIR',
    'CURL_HOME',
    'TRITON_CACHE_DIR',
    'TORCH_HOME',
    'HF_HOME',
    'CONDA_PREFIX',
    'OMPI_MCA_mca_base_component_path',
  ])
    assert.ok(deniedReason(name, 'code'), `${name} changes which code runs`);
  for (const name of [
    'JUPYTER_ENABLE_LAB',
    'JUPYTER_PORT',
    'TMPDIR',
    'TEMP',
    'TZDIR',
    'MALLOC_ARENA_MAX',
    'HTTPS_PROXY',
    'http_proxy',
    'HF_ENDPOINT',
    'SSLKEYLOGFILE',
    'HISTFILE',
  ]) {
    assert.equal(deniedReason(name, 'code'), null, `${name} is an application setting`);
    assert.ok(deniedReason(name), `${name} is refused where several accounts share the server`);
  }
  assert.equal(tenantEnvRefusal({ JUPYTER_ENABLE_LAB: 'yes', MODEL: 'm' }, undefined, 'code'), null);
  assert.deepEqual(screenInstanceEnv({ JUPYTER_ENABLE_LAB: 'yes', LD_PRELOAD: '/x.so' }, undefined, 'code'), {
    env: { JUPYTER_ENABLE_LAB: 'yes' },
    dropped: ['LD_PRELOAD'],
  });
});
