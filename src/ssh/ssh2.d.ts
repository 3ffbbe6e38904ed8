/**
 * The part of the `ssh2` library (https://github.com/mscdex/ssh2, MIT) the SSH proxy uses, typed
 * here rather than through `@types/ssh2`: the proxy needs a dozen members, and this keeps the
 * dependency to the library itself.
 */
declare module 'ssh2' {
  import type { EventEmitter } from 'node:events';
  import type { Duplex, Writable } from 'node:stream';
  import type { Socket } from 'node:net';

  export interface ParsedKey {
    type: string;
    comment: string;
    getPublicSSH(): Buffer;
    verify(data: Buffer, signature: Buffer, hashAlgo?: string): boolean | Error;
  }

  export const utils: {
    parseKey(data: string | Buffer, passphrase?: string): ParsedKey | ParsedKey[] | Error;
    generateKeyPairSync(type: 'ed25519'): { private: string; public: string };
  };

  export interface ServerConfig {
    hostKeys: Array<string | Buffer>;
    ident?: string;
    banner?: string;
    keepaliveInterval?: number;
    keepaliveCountMax?: number;
  }

  export interface AuthContext extends EventEmitter {
    username: string;
    method: 'none' | 'password' | 'publickey' | 'keyboard-interactive' | 'hostbased';
    /** publickey only */
    key?: { algo: string; data: Buffer };
    signature?: Buffer;
    blob?: Buffer;
    hashAlgo?: string;
    accept(): void;
    reject(methodsLeft?: string[], isPartial?: boolean): void;
  }

  export interface PseudoTtyInfo {
    cols: number;
    rows: number;
    width: number;
    height: number;
    term: string;
  }

  export interface WindowChangeInfo {
    cols: number;
    rows: number;
  }

  export interface ServerChannel extends Duplex {
    stderr: Writable;
    exit(code: number): void;
    exit(signal: string, coreDumped?: boolean, message?: string): void;
    close(): void;
  }

  type Accept<T = void> = () => T;
  type Reject = () => void;

  export interface Session extends EventEmitter {
    on(event: 'pty', listener: (accept: Accept, reject: Reject, info: PseudoTtyInfo) => void): this;
    on(
      event: 'window-change',
      listener: (accept: Accept | undefined, reject: Reject | undefined, info: WindowChangeInfo) => void,
    ): this;
    on(event: 'shell', listener: (accept: Accept<ServerChannel>, reject: Reject) => void): this;
    on(
      event: 'exec',
      listener: (accept: Accept<ServerChannel>, reject: Reject, info: { command: string }) => void,
    ): this;
    on(
      event: 'subsystem',
      listener: (accept: Accept<ServerChannel>, reject: Reject, info: { name: string }) => void,
    ): this;
    on(
      event: 'env' | 'x11' | 'auth-agent' | 'signal',
      listener: (accept: Accept | undefined, reject: Reject | undefined) => void,
    ): this;
    on(event: 'close', listener: () => void): this;
  }

  export interface Connection extends EventEmitter {
    on(event: 'authentication', listener: (ctx: AuthContext) => void): this;
    on(event: 'ready' | 'end' | 'close', listener: () => void): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: 'session', listener: (accept: Accept<Session>, reject: Reject) => void): this;
    on(event: 'tcpip' | 'openssh.streamlocal', listener: (accept: Accept<Duplex>, reject: Reject) => void): this;
    on(
      event: 'request',
      listener: (accept: ((port?: number) => void) | undefined, reject: Reject | undefined, name: string) => void,
    ): this;
    end(): this;
  }

  export interface ClientInfo {
    ip: string;
    port: number;
  }

  export class Server extends EventEmitter {
    constructor(config: ServerConfig, connectionListener?: (client: Connection, info: ClientInfo) => void);
    /** serves a connection accepted elsewhere */
    injectSocket(socket: Socket): void;
  }

  /** The package is CommonJS: Node's ESM loader gives its exports as the default export only. */
  const ssh2: { Server: typeof Server; utils: typeof utils };
  export default ssh2;
}
