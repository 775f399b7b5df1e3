/**
 * The SFTP server (spec area A "SFTP upload": port 2222, username and password issued by
 * staff). ssh2 in server mode with modern algorithms only; password login checked against the
 * product registry on every attempt (a rotated password stops working at once); failed logins
 * scored per client address with growing bans; a cap on concurrent sessions per product.
 */
import ssh2, { type Connection, type ServerConfig } from 'ssh2';
import { FailureLimiter, type FailureLimiterOptions } from '../../infra/failure-limiter.js';
import { listenOn } from '../../infra/listen.js';
import type { FilesService } from '../files/service.js';
import type { HostKey } from './host-keys.js';
import { type SessionLog, serveSftp } from './session.js';


/** SFTP channels open at once on one connection (OpenSSH, lftp and rclone use one each). */
const MAX_CHANNELS_PER_CONNECTION = 2;
export interface SftpAuthenticator {
  /** The product whose SFTP credentials these are, or null. */
  authenticateSftp(username: string, password: string): Promise<{ id: string } | null>;
}

export interface SftpServerOptions {
  hostKeys: HostKey[];
  auth: SftpAuthenticator;
  files: FilesService;
  log: SessionLog;
  /** Concurrent sessions per product on this instance. */
  maxSessionsPerProduct: number;
  /** Defaults: 10 failures within 5 minutes ban the address for 5 minutes, doubling up to a day. */
  failureLimits?: Partial<FailureLimiterOptions>;
  /** Seconds a connection may take to log in. */
  loginTimeoutSeconds?: number;
}

export interface SftpServer {
  listen(port: number, host: string): Promise<{ host: string; port: number }>;
  close(): Promise<void>;
}

/**
 * No SHA-1 anywhere, no CBC ciphers, no diffie-hellman-group1/group14-sha1 (the issue; OpenSSH
 * 9 defaults minus legacy). Host keys are ed25519 and ECDSA, both signing with SHA-2.
 */
export const SFTP_ALGORITHMS: NonNullable<ServerConfig['algorithms']> = {
  kex: [
    'curve25519-sha256',
    'curve25519-sha256@libssh.org',
    'ecdh-sha2-nistp256',
    'ecdh-sha2-nistp384',
    'ecdh-sha2-nistp521',
    'diffie-hellman-group-exchange-sha256',
    'diffie-hellman-group16-sha512',
    'diffie-hellman-group18-sha512',
    'diffie-hellman-group14-sha256',
  ],
  cipher: [
    'chacha20-poly1305@openssh.com',
    'aes128-gcm@openssh.com',
    'aes256-gcm@openssh.com',
    'aes128-ctr',
    'aes192-ctr',
    'aes256-ctr',
  ],
  hmac: ['hmac-sha2-256-etm@openssh.com', 'hmac-sha2-512-etm@openssh.com', 'hmac-sha2-256', 'hmac-sha2-512'],
  serverHostKey: ['ssh-ed25519', 'ecdsa-sha2-nistp256'],
  compress: ['none'],
};

export function createSftpServer(options: SftpServerOptions): SftpServer {
  const { auth, files, log } = options;
  const limiter = new FailureLimiter({
    maxFailures: 10,
    windowMs: 5 * 60_000,
    banMs: 5 * 60_000,
    maxBanMs: 24 * 3_600_000,
    ...options.failureLimits,
  });
  const sessions = new Map<string, number>();
  const connections = new Set<Connection>();
  const loginTimeoutMs = (options.loginTimeoutSeconds ?? 60) * 1000;

  const server = new ssh2.Server(
    { hostKeys: options.hostKeys.map((k) => k.privateKey), algorithms: SFTP_ALGORITHMS, ident: 'Pier' },
    (client, info) => {
      const ip = info.ip;
      if (limiter.retryAfter(ip) > 0) {
        // A banned address gets no key exchange at all (cheapest for us).
        client.end();
        return;
      }
      // SFTP is request/response: without TCP_NODELAY, Nagle's algorithm holds small replies
      // back until the client's delayed ACK (tens of ms per file on many-small-file uploads).
      (client as Connection & { setNoDelay(noDelay: boolean): void }).setNoDelay(true);
      connections.add(client);
      let productId: string | null = null;
      const timer = setTimeout(() => client.end(), loginTimeoutMs);
      timer.unref();

      client.on('authentication', (ctx) => {
        if (ctx.method !== 'password') {
          // RFC 4252 §5.2: the `none` request learns which methods may continue.
          return ctx.reject(['password']);
        }
        const username = ctx.username;
        const password = ctx.password;
        void (async () => {
          if (limiter.retryAfter(ip) > 0) {
            ctx.reject();
            client.end();
            return;
          }
          const product = await auth.authenticateSftp(username, password).catch((e: unknown) => {
            log.error({ ip, err: e }, 'sftp authentication failed with an error');
            return null;
          });
          if (!product) {
            const ban = limiter.fail(ip);
            // Never the password; the username helps staff help a vendor with a typo.
            log.warn({ ip, username }, ban ? `sftp login failed; address banned for ${ban} s` : 'sftp login failed');
            ctx.reject(['password']);
            if (ban) client.end();
            return;
          }
          const active = sessions.get(product.id) ?? 0;
          if (active >= options.maxSessionsPerProduct) {
            log.warn({ ip, productId: product.id }, `sftp login refused: ${active} sessions already open`);
            ctx.reject(['password']);
            return;
          }
          sessions.set(product.id, active + 1);
          productId = product.id;
          try {
            await files.ensureTree(product.id);
          } catch (e) {
            log.error({ productId, err: e }, 'sftp: cannot create the product folders');
            ctx.reject();
            client.end();
            return;
          }
          log.info({ ip, productId }, 'sftp login');
          ctx.accept();
        })();
      });

      client.on('ready', () => {
        clearTimeout(timer);
        const id = productId as string;
        let channels = 0;
        client.on('session', (acceptSession, rejectSession) => {
          // Sessions per product are capped by connection; channels per connection are capped
          // here, or one login could open hundreds of SFTP channels of 64 handles each and use
          // up the descriptors of the whole process (every product's web, downloads and SFTP).
          if (channels >= MAX_CHANNELS_PER_CONNECTION) {
            log.warn({ ip, productId: id }, `sftp: channel refused, ${channels} already open on this connection`);
            rejectSession();
            return;
          }
          channels += 1;
          const session = acceptSession();
          session.on('close', () => {
            channels -= 1;
          });
          // Accepted synchronously: OpenSSH sends INIT right behind the subsystem request, and
          // data arriving before accept() would be dropped.
          session.on('sftp', (acceptSftp) => serveSftp(acceptSftp(), { productId: id, files, log }));
          // Shells, exec, port forwarding: this server only speaks SFTP.
          session.on('exec', (_accept, reject) => reject());
          session.on('shell', (_accept, reject) => reject());
          session.on('pty', (_accept, reject) => reject?.());
          session.on('subsystem', (_accept, reject) => reject());
        });
        client.on('tcpip', (_accept, reject) => reject());
        client.on('request', (_accept, reject) => reject?.());
      });

      client.on('error', (e) => log.warn({ ip, err: e.message }, 'sftp connection error'));
      client.on('close', () => {
        clearTimeout(timer);
        connections.delete(client);
        if (productId) {
          const left = (sessions.get(productId) ?? 1) - 1;
          if (left > 0) sessions.set(productId, left);
          else sessions.delete(productId);
          log.info({ ip, productId }, 'sftp logout');
        }
      });
    },
  );

  return {
    async listen(port, host) {
      const a = await listenOn(server, port, host);
      return { host: a.address, port: a.port };
    },
    close() {
      return new Promise((resolve) => {
        for (const c of connections) c.end();
        server.close(() => resolve());
      });
    },
  };
}
