/**
 * The SFTP server (spec area A "SFTP upload": port 2222, username and password issued by
 * staff). ssh2 in server mode with modern algorithms only; password login checked against the
 * product registry on every attempt, and sessions already open end once the password is
 * rotated (the old one stops working at once); failed logins scored per client address with
 * growing bans; connections capped overall, connections not logged in yet capped overall and
 * per address and given a short time to log in; a cap on concurrent sessions per product.
 */
import net from 'node:net';
import ssh2, { type Connection, type ServerConfig } from 'ssh2';
import { FailureLimiter, type FailureLimiterOptions } from '../../infra/failure-limiter.js';
import { listenOn } from '../../infra/listen.js';
import type { FilesService } from '../files/service.js';
import type { HostKey } from './host-keys.js';
import { sftpMetrics } from './metrics.js';
import { DEFAULT_PACING, type PacingOptions, SessionPacer, TokenBucket } from './pacer.js';
import { type CredentialState, credentialWatch } from './credential-watch.js';
import { type ServedSession, type SessionLog, serveSftp } from './session.js';

/** SFTP channels open at once on one connection (OpenSSH, lftp and rclone use one each). */
const MAX_CHANNELS_PER_CONNECTION = 2;
/**
 * Connections held at once, each a descriptor: past this, new ones are closed as they arrive
 * (as the download host and nginx do), so the process keeps descriptors for its other parts.
 */
const MAX_CONNECTIONS = 1000;
/**
 * Connections not logged in yet, in all and from one address: each costs a key exchange and a
 * descriptor until it logs in or times out, so anonymous clients may hold only a slice of
 * MAX_CONNECTIONS, and one address only a few (OpenSSH's MaxStartups plays this part).
 */
const MAX_PENDING_LOGINS = 100;
const MAX_PENDING_PER_ADDRESS = 10;
/**
 * The unit the pre-login caps count by: an IPv4 address, or an IPv6 /64 (one host or site
 * commonly holds a whole /64, so counting single IPv6 addresses would be no cap at all).
 */
export function addressGroup(ip: string): string {
  if (!ip.includes(':') || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip)) return ip.replace(/^::ffff:/i, '');
  const [head = '', tail = ''] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const words = ip.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${words
    .slice(0, 4)
    .map((w) => w.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** How often an open session checks the credential it logged in with (credential-watch.ts). */
const CREDENTIAL_CHECK_MS = 5000;

/** What a refused request is told, by the kind of credential the session logged in with. */
const CREDENTIAL_MESSAGES = {
  password: { revoked: 'The SFTP password was changed: log in again with the new one', expired: 'The SFTP password has expired' },
  trusted: {
    revoked: 'The trusted-publishing credential was revoked: exchange a new ID token and log in again',
    expired: 'The trusted-publishing credential has expired: exchange a new ID token and log in again',
  },
} as const;

export interface SftpAuthenticator {
  /**
   * The product whose SFTP credentials these are, or null. `credential` names what the session
   * logged in with (its state is asked with it); `kind` says whether that is the product's
   * password or a trusted-publishing credential.
   */
  authenticateSftp(username: string, password: string): Promise<{ id: string; credential: string; kind: 'password' | 'trusted' } | null>;
  /** What the credential a session logged in with allows now (credential-watch.ts); the database decides. */
  sftpCredentialState(productId: string, credential: string): Promise<CredentialState>;
}

/** See `endIfIdle`: how long an idle session may stay while the server drains. */
const DRAIN_IDLE_GRACE_MS = 2000;

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
  /** Seconds a logged-in connection may go without an SFTP request. */
  idleTimeoutSeconds?: number;
  /** Connections held at once (MAX_CONNECTIONS unless set: tests). */
  maxConnections?: number;
  /** Connections not logged in yet, in all (MAX_PENDING_LOGINS unless set: tests). */
  maxPendingLogins?: number;
  /** Connections not logged in yet from one address (MAX_PENDING_PER_ADDRESS unless set: tests). */
  maxPendingPerAddress?: number;
  /** Milliseconds between an idle session's checks of its password (CREDENTIAL_CHECK_MS unless set: tests). */
  credentialCheckMs?: number;
  /**
   * Requests per second (and burst) one SFTP session may make, and one product across its
   * sessions on this instance; requests past it wait their turn (DEFAULT_PACING unless set).
   */
  pacing?: PacingOptions;
}

export interface SftpServer {
  listen(port: number, host: string): Promise<{ host: string; port: number }>;
  /**
   * Stops taking connections and ends every session once no transfer is in progress (after the
   * CLOSE of the file being uploaded or downloaded), or when `drainMs` has passed; 0 ends all now.
   */
  close(drainMs?: number): Promise<void>;
  /** Requests of a product's sessions that waited for their turn since the server started. */
  deferredRequests(productId: string): number;
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
  const metrics = sftpMetrics();
  const limiter = new FailureLimiter({
    maxFailures: 10,
    windowMs: 5 * 60_000,
    banMs: 5 * 60_000,
    maxBanMs: 24 * 3_600_000,
    ...options.failureLimits,
  });
  const sessions = new Map<string, number>();
  const connections = new Set<Connection>();
  /** Each logged-in connection's SFTP sessions (a drain ends the connection when none is busy). */
  const sessionsOf = new Map<Connection, Set<ServedSession>>();
  let draining = false;
  const idle = (client: Connection) => [...(sessionsOf.get(client) ?? [])].every((s) => !s.busy());
  /**
   * While draining, a session with no transfer in progress is ended after DRAIN_IDLE_GRACE_MS
   * if it starts none (it cannot: new ones are refused): a batch client that just finished its
   * last transfer disconnects by itself meanwhile and exits cleanly, which it does not when the
   * server disconnects it first (OpenSSH's sftp then exits with 255).
   */
  const endIfIdle = (client: Connection) => {
    if (!draining || !idle(client)) return;
    setTimeout(() => {
      if (idle(client)) client.end();
    }, DRAIN_IDLE_GRACE_MS).unref();
  };
  const sockets = new Set<net.Socket>();
  const loginTimeoutMs = (options.loginTimeoutSeconds ?? 15) * 1000;
  const idleTimeoutMs = (options.idleTimeoutSeconds ?? 900) * 1000;
  const maxPendingLogins = options.maxPendingLogins ?? MAX_PENDING_LOGINS;
  const maxPendingPerAddress = options.maxPendingPerAddress ?? MAX_PENDING_PER_ADDRESS;
  const credentialCheckMs = options.credentialCheckMs ?? CREDENTIAL_CHECK_MS;
  /** Connections not logged in yet, per address. */
  /** Connections not logged in yet, by address group, oldest first, each with what releases its place. */
  const pending = new Map<string, Map<net.Socket, { since: number; leave: () => void }>>();
  let pendingTotal = 0;
  /**
   * Makes room for a newcomer from `group` when every pre-login place is taken: the oldest
   * connection of the group holding the most places goes (a client that logs in leaves within
   * a second, a silent one stays), unless the newcomer's group already holds as many. So a few
   * addresses holding every place cannot keep a client of another address out.
   */
  const displaceFor = (group: string): boolean => {
    const own = pending.get(group)?.size ?? 0;
    let victim: [net.Socket, { since: number; leave: () => void }] | undefined;
    let most = own;
    for (const held of pending.values()) {
      const oldest = held.entries().next().value;
      if (!oldest) continue;
      if (held.size > most || (held.size === most && most > own && victim && oldest[1].since < victim[1].since)) {
        most = held.size;
        victim = oldest;
      }
    }
    if (!victim) return false;
    victim[1].leave();
    victim[0].destroy();
    return true;
  };
  /** Marks a pending connection as logged in, by "address|port" (what ssh2's connection info names). */
  const loggedIn = new Map<string, () => void>();
  /** Open sockets by "address|port", to stop reading one while its requests wait (pacing). */
  const socketOf = new Map<string, net.Socket>();
  const pacing = options.pacing ?? DEFAULT_PACING;
  /** Each product's shared bucket while it has sessions here. */
  const productPacing = new Map<string, { bucket: TokenBucket; sessions: number }>();
  const deferredByProduct = new Map<string, number>();

  const ssh = new ssh2.Server(
    { hostKeys: options.hostKeys.map((k) => k.privateKey), algorithms: SFTP_ALGORITHMS, ident: 'Pier' },
    (client, info) => {
      const ip = info.ip;
      connections.add(client);
      let productId: string | null = null;
      /** What the session logged in with (see `watch`). */
      let credential = '';
      let credentialKind: 'password' | 'trusted' = 'password';
      let closed = false;
      let idleTimer: NodeJS.Timeout | undefined;
      let checkTimer: NodeJS.Timeout | undefined;

      client.on('authentication', (ctx) => {
        if (ctx.method !== 'password') {
          // RFC 4252 §5.2: the `none` request learns which methods may continue.
          return ctx.reject(['password']);
        }
        const username = ctx.username;
        const password = ctx.password;
        void (async () => {
          if (limiter.retryAfter(addressGroup(ip)) > 0) {
            metrics?.logins.inc({ outcome: 'refused' });
            ctx.reject();
            client.end();
            return;
          }
          const product = await auth.authenticateSftp(username, password).catch((e: unknown) => {
            log.error({ ip, err: e }, 'sftp authentication failed with an error');
            return null;
          });
          if (!product) {
            // Counted even when the client has gone meanwhile: dropping the connection must
            // not be a way around the limiter.
            const ban = limiter.fail(addressGroup(ip));
            metrics?.logins.inc({ outcome: 'failed' });
            // Never the password; the username helps staff help a vendor with a typo.
            log.warn({ ip, username }, ban ? `sftp login failed; address banned for ${ban} s` : 'sftp login failed');
            ctx.reject(['password']);
            if (ban) client.end();
            return;
          }
          // The connection closed while the password was checked (scrypt): its 'close' has
          // already run, so a session counted now would never be released.
          if (closed || productId) return;
          const active = sessions.get(product.id) ?? 0;
          if (active >= options.maxSessionsPerProduct) {
            log.warn({ ip, productId: product.id }, `sftp login refused: ${active} sessions already open`);
            metrics?.logins.inc({ outcome: 'refused' });
            ctx.reject(['password']);
            return;
          }
          // Counted and recorded in one step: from here on 'close' releases it, on every path.
          sessions.set(product.id, active + 1);
          productId = product.id;
          metrics?.sessions.inc();
          credential = product.credential;
          credentialKind = product.kind;
          try {
            await files.ensureTree(product.id);
          } catch (e) {
            log.error({ productId, err: e }, 'sftp: cannot create the product folders');
            ctx.reject();
            client.end();
            return;
          }
          log.info({ ip, productId }, 'sftp login');
          metrics?.logins.inc({ outcome: 'ok' });
          ctx.accept();
        })();
      });

      client.on('ready', () => {
        loggedIn.get(`${ip}|${info.port}`)?.();
        const id = productId as string;
        idleTimer = setTimeout(() => {
          log.info({ ip, productId: id }, 'sftp session idle; closed');
          client.end();
        }, idleTimeoutMs);
        idleTimer.unref();

        /**
         * What the session may still do with its credential (credential-watch.ts): rotated or
         * revoked (by `pier staff`, possibly through another instance: the database decides),
         * the session ends now; a trusted credential past its expiry, once its transfers in
         * progress finished. Asked before every request that opens or changes files, and every
         * few seconds while idle.
         */
        const kind = credentialKind;
        const watch = credentialWatch({
          read: () => auth.sftpCredentialState(id, credential),
          busy: () => !idle(client),
          messages: CREDENTIAL_MESSAGES[kind],
          end: (why) => {
            const what = kind === 'password' ? 'the password was changed' : `the trusted-publishing credential ${why === 'expired' ? 'expired' : 'was revoked'}`;
            log.warn({ ip, productId: id }, `sftp session ended: ${what}`);
            client.end();
          },
        });
        checkTimer = setInterval(() => void watch.poll().catch(() => {}), credentialCheckMs);
        checkTimer.unref();

        const shared = productPacing.get(id) ?? { bucket: new TokenBucket(pacing), sessions: 0 };
        shared.sessions += 1;
        productPacing.set(id, shared);
        client.once('close', () => {
          shared.sessions -= 1;
          if (shared.sessions === 0 && productPacing.get(id) === shared) productPacing.delete(id);
        });
        /** Channels of this connection that asked to stop reading it (their queues are long). */
        let pausing = 0;
        const backpressure = (pause: boolean) => {
          pausing += pause ? 1 : -1;
          const socket = socketOf.get(`${ip}|${info.port}`);
          if (pausing > 0) socket?.pause();
          else socket?.resume();
        };

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
          session.on('sftp', (acceptSftp) => {
            let warned = false;
            const pacer = new SessionPacer([new TokenBucket(pacing), shared.bucket], {
              backpressure,
              deferred: () => {
                deferredByProduct.set(id, (deferredByProduct.get(id) ?? 0) + 1);
                if (!warned) log.warn({ ip, productId: id }, 'sftp session over its request budget; its requests now wait');
                warned = true;
              },
            });
            const served = serveSftp(acceptSftp(), {
              productId: id,
              files,
              log,
              activity: () => idleTimer?.refresh(),
              checkCredential: watch.check,
              pacer,
              metrics,
              onIdle: () => {
                endIfIdle(client);
                watch.idle();
              },
              draining: () => draining,
            });
            const own = sessionsOf.get(client) ?? new Set();
            own.add(served);
            sessionsOf.set(client, own);
          });
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
        closed = true;
        clearTimeout(idleTimer);
        clearInterval(checkTimer);
        connections.delete(client);
        sessionsOf.delete(client);
        if (productId) {
          const left = (sessions.get(productId) ?? 1) - 1;
          if (left > 0) sessions.set(productId, left);
          else sessions.delete(productId);
          metrics?.sessions.dec();
          log.info({ ip, productId }, 'sftp logout');
        }
      });
    },
  );

  // Connections are taken here, before ssh2 sees them: ssh2 announces a connection only once the
  // client has sent its version line, so a socket that never says a word would escape both the
  // caps and the login timeout.
  const server = net.createServer({ noDelay: true }, (socket) => {
    // SFTP is request/response: without TCP_NODELAY (noDelay above), Nagle's algorithm holds
    // small replies back until the client's delayed ACK (tens of ms per file).
    socket.on('error', () => {});
    const ip = socket.remoteAddress ?? '';
    const group = addressGroup(ip);
    const fromHere = pending.get(group)?.size ?? 0;
    // A banned address gets no key exchange at all (cheapest for us).
    const refused = limiter.retryAfter(addressGroup(ip)) > 0 || fromHere >= maxPendingPerAddress || (pendingTotal >= maxPendingLogins && !displaceFor(group));
    if (refused) {
      if (limiter.retryAfter(addressGroup(ip)) === 0) log.warn({ ip }, 'sftp connection refused: too many connections not logged in');
      socket.destroy();
      return;
    }
    pendingTotal += 1;
    const key = `${ip}|${socket.remotePort}`;
    const timer = setTimeout(() => socket.destroy(), loginTimeoutMs);
    timer.unref();
    let waiting = true;
    const leavePending = () => {
      if (!waiting) return;
      waiting = false;
      clearTimeout(timer);
      loggedIn.delete(key);
      pendingTotal -= 1;
      const held = pending.get(group);
      held?.delete(socket);
      if (held?.size === 0) pending.delete(group);
    };
    const held = pending.get(group) ?? new Map();
    held.set(socket, { since: performance.now(), leave: leavePending });
    pending.set(group, held);
    loggedIn.set(key, leavePending);
    sockets.add(socket);
    socketOf.set(key, socket);
    socket.once('close', () => {
      leavePending();
      sockets.delete(socket);
      socketOf.delete(key);
    });
    ssh.injectSocket(socket);
  });
  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;

  return {
    async listen(port, host) {
      const a = await listenOn(server, port, host);
      return { host: a.address, port: a.port };
    },
    deferredRequests: (productId) => deferredByProduct.get(productId) ?? 0,
    close(drainMs = 0) {
      return new Promise((resolve) => {
        draining = true;
        server.close(() => resolve());
        const force = () => {
          for (const c of connections) c.end();
          for (const s of sockets) s.destroy();
        };
        if (drainMs <= 0) return force();
        // Not logged in yet, or logged in and idle: ended now; the rest after their transfer.
        for (const c of connections) {
          if (sessionsOf.has(c)) endIfIdle(c);
          else c.end();
        }
        setTimeout(force, drainMs).unref();
      });
    },
  };
}
