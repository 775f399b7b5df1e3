/**
 * A cron expression in words, for people choosing one ("At 06:30, Monday through Friday").
 * Reads the runner's own syntax (cron.ts): 5 fields, 6 with a leading fixed second, or a
 * nickname. Fields it does not recognise are quoted as they are rather than guessed.
 */
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const NICKNAMES: Record<string, string> = {
  '@yearly': 'At 00:00 on 1 January',
  '@annually': 'At 00:00 on 1 January',
  '@monthly': 'At 00:00 on day 1 of the month',
  '@weekly': 'At 00:00 on Sunday',
  '@daily': 'At 00:00 every day',
  '@hourly': 'At minute 0 of every hour',
};

const two = (n: number) => String(n).padStart(2, '0');

/** "a, b and c". */
function list(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** One value of a field as a number (names for months and weekdays), or null. */
function value(text: string, names: string[], offset: number): number | null {
  const i = names.indexOf(text.toUpperCase());
  if (i >= 0) return i + offset;
  return /^\d{1,2}$/.test(text) ? Number(text) : null;
}

/** A list/range field in words with `word(n)` naming each value, or null when it is not plain. */
function field(text: string, word: (n: number) => string, names: string[] = [], offset = 0): string | null {
  const parts: string[] = [];
  for (const part of text.split(',')) {
    const step = /^(\*|[^/]+)\/(\d+)$/.exec(part);
    if (step) {
      const from = step[1] === '*' ? null : value(step[1]!.split('-')[0]!, names, offset);
      if (step[1] !== '*' && from === null) return null;
      parts.push(`every ${step[2]}${from === null ? '' : ` from ${word(from)}`}`);
      continue;
    }
    const range = /^([^-]+)-([^-]+)$/.exec(part);
    if (range) {
      const a = value(range[1]!, names, offset);
      const b = value(range[2]!, names, offset);
      if (a === null || b === null) return null;
      parts.push(`${word(a)} through ${word(b)}`);
      continue;
    }
    const v = value(part, names, offset);
    if (v === null) return null;
    parts.push(word(v));
  }
  return list(parts);
}

function timeOf(minute: string, hour: string): string {
  const m = /^\d{1,2}$/.test(minute) ? Number(minute) : null;
  const hours = hour.split(',');
  if (m !== null && hours.every((h) => /^\d{1,2}$/.test(h))) return `At ${list(hours.map((h) => `${two(Number(h))}:${two(m)}`))}`;
  const everyHours = /^\*\/(\d+)$/.exec(hour);
  const hourText = hour === '*' ? 'every hour' : everyHours ? `every ${everyHours[1]} hours` : `hours ${field(hour, String) ?? `"${hour}"`}`;
  if (m !== null) return `At minute ${m} of ${hourText}`;
  const everyMinutes = /^\*\/(\d+)$/.exec(minute);
  if (minute === '*' || everyMinutes) {
    const minutes = everyMinutes ? `Every ${everyMinutes[1]} minutes` : 'Every minute';
    return hour === '*' ? minutes : `${minutes}, during ${hourText}`;
  }
  return `At minutes ${field(minute, String) ?? `"${minute}"`} of ${hourText}`;
}

function dayOfMonth(text: string): string | null {
  if (text === '*' || text === '?') return null;
  if (text === 'L') return 'on the last day of the month';
  const days = field(text, String);
  return days ? `on day ${days} of the month` : `on days "${text}" of the month`;
}

const ORDINAL = ['', 'first', 'second', 'third', 'fourth', 'fifth'];

function weekday(text: string): string | null {
  if (text === '*' || text === '?') return null;
  const nth = /^([0-7])#([1-5])$/.exec(text);
  if (nth) return `on the ${ORDINAL[Number(nth[2])]} ${DAYS[Number(nth[1]) % 7]} of the month`;
  const days = field(text, (n) => DAYS[n % 7] ?? String(n), DAY_NAMES);
  return days ? `on ${days}` : `on weekdays "${text}"`;
}

function month(text: string): string | null {
  if (text === '*') return null;
  const every = /^\*\/(\d+)$/.exec(text);
  if (every) return `every ${every[1]} months`;
  const months = field(text, (n) => MONTHS[n - 1] ?? String(n), MONTH_NAMES, 1);
  return months ? `in ${months}` : `in months "${text}"`;
}

export function describeCron(cron: string): string {
  const expr = cron.trim();
  const nick = NICKNAMES[expr.toLowerCase()];
  if (nick) return nick;
  const fields = expr.split(/\s+/);
  const [second, minute, hour, dom, mon, dow] = fields.length === 6 ? fields : ['0', ...fields];
  if (minute === undefined || hour === undefined || dom === undefined || mon === undefined || dow === undefined) return expr;
  let text = timeOf(minute, hour);
  if (second !== '0' && second !== '00') text += `, at second ${second}`;
  const d = dayOfMonth(dom);
  const w = weekday(dow);
  // Standard cron: with both restricted, either matching is enough.
  const days = d && w ? `${d} or ${w}` : (d ?? w);
  if (days) text += `, ${days}`;
  const m = month(mon);
  if (m) text += `, ${m}`;
  return text;
}
