/**
 * A stand-in agent speaking the agent protocol over real HTTP to one control-plane replica: it
 * polls its operations, applies them to containers it keeps in memory, and acknowledges and
 * reports them (the agent process itself is tested in the fleet's end-to-end suites).
 */
import assert from 'node:assert/strict';
import type { InstanceReport, Operation } from '../../src/fleet/protocol.js';
import { AGENT_API_PREFIX } from '../../src/fleet/protocol.js';
import { call } from './fleet.js';

export class HttpAgent {
  readonly containers = new Map<string, InstanceReport>();
  readonly received: Operation[] = [];
  after = 0;

  constructor(
    public server: string,
    readonly credential: string,
    /** how long `until` waits for an operation (real time: it bounds a hung test, it times nothing) */
    readonly waitMs = 30_000,
  ) {}

  report(body: Record<string, unknown>) {
    return call(this.server, this.credential, 'POST', `${AGENT_API_PREFIX}/report`, body);
  }

  /** Takes what is queued (waiting up to `waitMs`), applies it, and reports acks and changes. Answers the operations. */
  async step(waitMs = 2_000): Promise<Operation[]> {
    const res = await call(
      this.server,
      this.credential,
      'GET',
      `${AGENT_API_PREFIX}/operations?after=${this.after}&waitMs=${waitMs}`,
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const ops = res.body.operations as Operation[];
    const changed: InstanceReport[] = [];
    for (const op of ops) {
      this.received.push(op);
      this.after = Math.max(this.after, op.seq);
      if (op.kind === 'start') {
        const item: InstanceReport = {
          id: op.instanceId,
          owner: op.spec.owner,
          state: 'running',
          startedAt: Date.now(),
          exitCode: null,
          reason: null,
        };
        this.containers.set(op.instanceId, item);
        changed.push(item);
      } else if (op.kind === 'stop') {
        const item: InstanceReport = { ...this.containers.get(op.instanceId)!, state: 'exited', kept: true };
        this.containers.set(op.instanceId, item);
        changed.push(item);
      } else if (op.kind === 'remove') this.containers.delete(op.instanceId);
    }
    if (ops.length > 0) {
      const r = await this.report({
        acks: ops.map((o) => ({ opId: o.id, ok: true })),
        instances: { full: false, items: changed },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    return ops;
  }

  /** Steps until an operation of `kind` for `id` arrives. */
  async until(kind: Operation['kind'], id: string): Promise<Operation> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const found = (await this.step()).find((o) => o.kind === kind && 'instanceId' in o && o.instanceId === id);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`not within ${this.waitMs} ms: a ${kind} of ${id} on the agent`);
    }
  }

  /** Reconnects: every operation not acknowledged is delivered again, from the first. */
  reconnect(): void {
    this.after = 0;
  }

  /** A full report: every container it has. */
  full() {
    return this.report({ instances: { full: true, items: [...this.containers.values()] } });
  }
}
