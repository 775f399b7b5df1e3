/**
 * SFTP instruments (pier_sftp_*, table in infra/metrics/registry.ts): null while metrics are
 * off. Labels are outcomes only: never a username, a product id or a path (client input).
 */
import { Counter, Gauge } from 'prom-client';
import { instruments } from '../../infra/metrics/registry.js';

export const sftpMetrics = instruments((registry) => {
  const logins = new Counter({
    name: 'pier_sftp_logins_total',
    help: 'SFTP password logins: ok, failed (wrong credentials) or refused (banned address, session cap)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const uploads = new Counter({
    name: 'pier_sftp_uploads_total',
    help: 'SFTP uploads committed at CLOSE, or refused (quota or size limit, resume, password changed)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Every outcome from the first scrape on: rate() needs the series to exist.
  for (const outcome of ['ok', 'failed', 'refused']) logins.inc({ outcome }, 0);
  for (const outcome of ['committed', 'refused']) uploads.inc({ outcome }, 0);
  return {
    logins,
    uploads,
    sessions: new Gauge({ name: 'pier_sftp_sessions', help: 'SFTP connections logged in now', registers: [registry] }),
    uploadedBytes: new Counter({ name: 'pier_sftp_uploaded_bytes_total', help: 'Bytes written by SFTP WRITE requests', registers: [registry] }),
    downloadedBytes: new Counter({ name: 'pier_sftp_downloaded_bytes_total', help: 'Bytes answered to SFTP READ requests', registers: [registry] }),
  };
});

export type SftpMetrics = NonNullable<ReturnType<typeof sftpMetrics>>;
