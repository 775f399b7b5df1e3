/** Times in the user's own time zone, sizes in binary units. */
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : dateTime.format(t);
}

/** "3 minutes ago", "in 2 hours". */
export function fromNow(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const s = Math.round((Date.parse(iso) - now) / 1000);
  const abs = Math.abs(s);
  if (abs < 45) return relative.format(s, 'second');
  if (abs < 45 * 60) return relative.format(Math.round(s / 60), 'minute');
  if (abs < 22 * 3600) return relative.format(Math.round(s / 3600), 'hour');
  return relative.format(Math.round(s / 86400), 'day');
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
  return `${v < 10 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`;
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });

/** The time of day of an instant (a log line's), in the user's zone: 14:03:27. */
export function formatClock(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '' : clock.format(t);
}

export const userTimeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
