// Reading a /metrics page in tests with an independent parser of the text format (prom2javascript),
// not with prom-client, which wrote it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { getMetricsFromStream, type PromData, type PromHistogramData, type PromMetrics } from 'prom2javascript';

export interface Page {
  text: string;
  contentType: string | null;
  metrics: PromMetrics;
}

export async function scrape(url: string): Promise<Page> {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  const text = await res.text();
  // Prometheus refuses a page that declares a family twice (its parser: "second TYPE line").
  const declared = [...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]);
  assert.equal(new Set(declared).size, declared.length, `a family is declared twice: ${declared.filter((n, i) => declared.indexOf(n) !== i).join(', ')}`);
  // prom-client writes NaN (as "Nan") for nodejs_eventloop_lag_* before the first sample; the
  // format allows it (Prometheus reads values with Go's ParseFloat, any case), this parser does
  // not know NaN at all: such samples are left out of what it reads.
  const parsed = await getMetricsFromStream(Readable.from([text.replace(/^\S+ Nan\n/gim, '')]));
  return { text, contentType: res.headers.get('content-type'), metrics: parsed };
}

const matches = (labels: Record<string, string>, wanted: Record<string, string>) => Object.entries(wanted).every(([k, v]) => labels[k] === v);

/** The sum of a counter's or gauge's series that carry `labels` (a subset); the family must be on the page. */
export function value(page: Page, name: string, labels: Record<string, string> = {}): number {
  const family = page.metrics[name];
  assert.ok(family, `${name} is on the page`);
  return (family.data as PromData[]).filter((d) => matches(d.labels, labels)).reduce((sum, d) => sum + d.value, 0);
}

/** Whether a series of `name` with `labels` is on the page. */
export function has(page: Page, name: string, labels: Record<string, string>): boolean {
  return (page.metrics[name]?.data ?? []).some((d) => matches(d.labels, labels));
}

/** Observations of a histogram's series that carry `labels`. */
export function observations(page: Page, name: string, labels: Record<string, string> = {}): number {
  const family = page.metrics[name];
  assert.ok(family, `${name} is on the page`);
  assert.equal(family.type, 'histogram');
  return (family.data as PromHistogramData[]).filter((d) => matches(d.labels, labels)).reduce((sum, d) => sum + d.count, 0);
}

/** Every label value on the page, with the series it is on. */
export function labelValues(page: Page): { name: string; label: string; value: string }[] {
  const out: { name: string; label: string; value: string }[] = [];
  for (const [name, family] of Object.entries(page.metrics)) {
    for (const d of family.data) for (const [label, v] of Object.entries(d.labels)) out.push({ name, label, value: v });
  }
  return out;
}

/** TCP ports a process listens on, with their addresses (Linux /proc). */
export function listeningPorts(pid: number): { address: string; port: number }[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const out: { address: string; port: number }[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address, state (0A = LISTEN), inode
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9] as string)) continue;
      const [hex = '', port = '0'] = (f[1] as string).split(':');
      out.push({ address: hexAddress(hex), port: Number.parseInt(port, 16) });
    }
  }
  return out.sort((a, b) => a.port - b.port);
}

/** /proc/net's little-endian hex of an IPv4 or IPv6 address, as text (IPv6 shown only as "::" or "[v6]"). */
function hexAddress(hex: string): string {
  if (hex.length === 8) return (hex.match(/../g) ?? []).reverse().map((b) => Number.parseInt(b, 16)).join('.');
  if (/^0+$/.test(hex)) return '::';
  if (hex === '00000000000000000000000001000000') return '::1';
  return `[v6 ${hex}]`;
}
