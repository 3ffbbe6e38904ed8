import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firewallDestinations } from './firewall-destinations.js';

test("a URL lets through each IPv4 address its host resolves to, on its port (the scheme's when it names none)", async () => {
  const resolve = async (host: string) => (host === 'jobs.corp.example' ? ['10.0.0.5', '10.0.0.6', '10.0.0.5'] : []);
  assert.deepEqual(await firewallDestinations('http://jobs.corp.example:8081/v2', resolve), [
    { cidr: '10.0.0.5/32', port: 8081 },
    { cidr: '10.0.0.6/32', port: 8081 },
  ]);
  assert.deepEqual(await firewallDestinations('https://10.1.2.3', resolve), [{ cidr: '10.1.2.3/32', port: 443 }]);
  assert.deepEqual(await firewallDestinations('http://10.1.2.3', resolve), [{ cidr: '10.1.2.3/32', port: 80 }]);
  assert.deepEqual(
    await firewallDestinations('http://[fd00::1]:8080', resolve),
    [],
    'containers have no IPv6 to reach it by',
  );
});
