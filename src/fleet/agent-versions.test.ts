import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { controlPlaneVersion, versionSkewMessage, versionVerdict } from './agent-versions.js';
import { checkControlPlaneVersion } from '../agent/version-check.js';
import { AgentFatal } from '../agent/agent-fatal.js';
import { installCommand } from './agent-downloads.js';

test('an agent joins a control plane of the same major version and a minor version at most one apart', () => {
  const cases: Array<[string, string, string]> = [
    ['0.1.0', '0.1.0', 'compatible'],
    ['0.1.9', '0.2.0', 'compatible'],
    ['0.3.0', '0.2.4', 'compatible'],
    ['1.4.0-rc.1', '1.5.2', 'compatible'],
    ['0.1.0', '0.3.0', 'incompatible'],
    ['0.4.0', '0.2.0', 'incompatible'],
    ['1.0.0', '0.9.0', 'incompatible'],
    ['9.0.0', '0.1.0', 'incompatible'],
    ['unknown', '0.1.0', 'unknown'],
    ['0.1', '0.1.0', 'unknown'],
  ];
  for (const [agent, controlPlane, verdict] of cases)
    assert.equal(versionVerdict(agent, controlPlane), verdict, `${agent} against ${controlPlane}`);
});

test('the message names both versions and tells which side to upgrade, with the command', () => {
  const upgrade = installCommand('https://gantry.example.com', null);
  assert.equal(upgrade, 'curl -fsSL https://gantry.example.com/agent/v1/install.sh | sudo sh');
  const older = versionSkewMessage('0.1.0', '0.3.0', upgrade);
  assert.match(older, /agent is version 0\.1\.0 and the control plane 0\.3\.0/);
  assert.ok(older.includes(`Upgrade the agent on the host: ${upgrade}`), older);
  const newer = versionSkewMessage('0.5.0', '0.3.0', upgrade);
  assert.ok(newer.includes('Upgrade the control plane first'), newer);
});

test("the control plane's version is the package's", () => {
  assert.match(controlPlaneVersion(), /^\d+\.\d+\.\d+/);
});

test('an agent ends with status 2 on a join answer from a control plane too far from it, naming the host to revoke; a close or silent one goes on', () => {
  const logger = pino({ level: 'silent' });
  const answer = {
    hostId: 'host-abc',
    credential: 'ghc_x',
    dataCenterId: 'EU-RO-1',
    cloud: 'SECURE' as const,
    heartbeatMs: 1000,
    pollWaitMs: 1000,
  };
  assert.throws(
    () => checkControlPlaneVersion('0.1.0', { ...answer, controlPlaneVersion: '2.0.0' }, 'https://cp.test', logger),
    (err: unknown) =>
      err instanceof AgentFatal &&
      err.exitCode === 2 &&
      err.message.includes('0.1.0') &&
      err.message.includes('2.0.0') &&
      err.message.includes('https://cp.test/agent/v1/install.sh') &&
      err.message.includes('gantry hosts revoke host-abc'),
  );
  checkControlPlaneVersion('0.1.0', { ...answer, controlPlaneVersion: '0.2.3' }, 'https://cp.test', logger);
  checkControlPlaneVersion('0.1.0', answer, 'https://cp.test', logger);
  checkControlPlaneVersion('unknown', { ...answer, controlPlaneVersion: '0.2.3' }, 'https://cp.test', logger);
});
