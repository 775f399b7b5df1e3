/**
 * Programs that are not interpreters but read an option's value, or some operands, as code: tar
 * runs `--to-command`, `--checkpoint-action=exec=` and `--use-compress-program` through a shell,
 * rsync runs `-e` as its remote shell, zip runs `-TT` to test an archive, and SQL clients run
 * `-c`/`-e` and their operands (SQL reaches the shell through psql's `\!`, sqlite3's `.shell`,
 * `COPY … PROGRAM`). These tools take options among their operands (GNU getopt and its kin
 * permute until `--`), so a run parameter standing as an operand before `--` could be such an
 * option: it chooses what runs. Best effort, as the rest of code-arguments.ts.
 */
import { MARK, type Reason } from './code-words.js';

export interface OptionProgram {
  /** Options whose value is code: a command line for a shell, SQL, or a program with its arguments. */
  code: string[];
  /** Options whose value names a program or a file of code that runs. */
  chooses?: string[];
  /** Options that take a value that is not code (the next word unless attached). */
  values?: string[];
  /** One-letter options may be clustered, a valued one last taking the rest or the next word (`tar -xzf F`). */
  cluster?: boolean;
  /** tar's old style: a first word without `-` is a cluster whose valued letters take the next words in turn (`tar xzf F`). */
  oldStyle?: boolean;
  /** Operands from this one on (0: the first) are code (`sqlite3 DB SQL…`). */
  codeOperandsFrom?: number;
  /** Long options with one dash (`sqlite3 -cmd`); two dashes are read the same. */
  singleDashLong?: boolean;
  /** Reads code from standard input when given none (a here-document to it is code). */
  stdin?: boolean;
}

const TAR_VALUES = [
  '-f', '--file', '-C', '--directory', '-T', '--files-from', '-X', '--exclude-from', '-b', '--blocking-factor', '-g', '--listed-incremental', '-H', '--format',
  '-K', '--starting-file', '-L', '--tape-length', '-N', '--newer', '--after-date', '--newer-mtime', '-V', '--label', '--exclude', '--exclude-tag', '--exclude-tag-all',
  '--exclude-tag-under', '--owner', '--group', '--mode', '--mtime', '--transform', '--xform', '--strip-components', '--suffix', '--record-size', '--sort',
  '--warning', '--quoting-style', '--index-file', '--level', '--volno-file', '--hole-detection', '--owner-map', '--group-map', '--add-file',
];
const RSYNC_VALUES = [
  '-f', '--filter', '--exclude', '--include', '--exclude-from', '--include-from', '--files-from', '-T', '--temp-dir', '--partial-dir', '--log-file',
  '--log-file-format', '--out-format', '--chmod', '--chown', '-B', '--block-size', '--port', '--password-file', '--backup-dir', '--suffix', '--compare-dest',
  '--copy-dest', '--link-dest', '--bwlimit', '--max-size', '--min-size', '--max-delete', '--timeout', '--contimeout', '--modify-window', '--iconv', '--usermap',
  '--groupmap', '--address', '--sockopts', '--outbuf', '--checksum-choice', '--compress-choice', '--compress-level', '--skip-compress', '--info', '--debug',
  '--stop-after', '--stop-at',
];

export const OPTION_PROGRAMS: Record<string, OptionProgram> = {
  tar: {
    code: ['--to-command', '--checkpoint-action', '--use-compress-program', '-I', '--info-script', '--new-volume-script', '-F'],
    chooses: ['--rsh-command', '--rmt-command'],
    values: TAR_VALUES,
    cluster: true,
    oldStyle: true,
  },
  rsync: { code: ['-e', '--rsh', '--rsync-path', '-M', '--remote-option'], values: RSYNC_VALUES, cluster: true },
  zip: {
    code: ['-TT', '--unzip-command'],
    values: ['-b', '--temp-path', '-n', '--suffixes', '-t', '--from-date', '-tt', '--before-date', '-O', '--out', '-P', '--password', '-Z', '--compression-method', '-s', '--split-size', '-x', '--exclude', '-i', '--include'],
    cluster: true,
  },
  psql: {
    code: ['-c', '--command'],
    // `-o '|cmd'` writes through a shell command: a file name a run parameter gives could start with a pipe.
    chooses: ['-f', '--file', '-o', '--output'],
    values: ['-d', '--dbname', '-h', '--host', '-p', '--port', '-U', '--username', '-v', '--set', '--variable', '-L', '--log-file', '-P', '--pset', '-F', '--field-separator', '-R', '--record-separator', '-T', '--table-attr'],
    cluster: true,
    stdin: true,
  },
  sqlite3: {
    code: ['-cmd'],
    chooses: ['-init'],
    values: ['-separator', '-newline', '-nullvalue', '-vfs', '-mmap', '-heap', '-lookaside', '-pagecache', '-maxsize', '-escape'],
    codeOperandsFrom: 1,
    singleDashLong: true,
    stdin: true,
  },
  mysql: {
    code: ['-e', '--execute', '--init-command'],
    chooses: ['--defaults-file', '--defaults-extra-file', '--plugin-dir'],
    values: ['-u', '--user', '-h', '--host', '-P', '--port', '-D', '--database', '-S', '--socket', '--default-character-set', '--connect-timeout'],
    cluster: true,
    stdin: true,
  },
};
OPTION_PROGRAMS.mariadb = OPTION_PROGRAMS.mysql!;
// GNU tar's common other name, and libarchive's tar (same code options; bsdtar also reads options among operands).
OPTION_PROGRAMS.gtar = OPTION_PROGRAMS.tar!;
OPTION_PROGRAMS.bsdtar = OPTION_PROGRAMS.tar!;
// DuckDB's shell is sqlite3's: `-c`/`-s` run a command, operands after the database are SQL, `.shell`/`.system` reach a shell.
OPTION_PROGRAMS.duckdb = {
  code: ['-c', '-s', '-cmd'],
  chooses: ['-init'],
  values: ['-separator', '-newline', '-nullvalue', '-storage_version'],
  codeOperandsFrom: 1,
  singleDashLong: true,
  stdin: true,
};
// ClickHouse's client runs `--query` (SQL, whose table functions and `system` commands reach programs and files).
OPTION_PROGRAMS['clickhouse-client'] = {
  code: ['-q', '--query'],
  chooses: ['--queries-file', '--config-file', '-C', '--config'],
  values: ['-h', '--host', '--port', '-u', '--user', '--password', '-d', '--database', '-f', '--format', '--param', '--max_threads'],
  cluster: true,
  stdin: true,
};
// man runs its pager (`-P`, `--pager`) through a shell.
OPTION_PROGRAMS.man = {
  code: ['-P', '--pager'],
  chooses: ['-H', '--html', '-M', '--manpath', '-C', '--config-file'],
  values: ['-L', '--locale', '-m', '--systems', '-S', '-s', '--sections', '-e', '--extension', '-E', '--encoding', '-R', '--recode', '-T', '--troff-device', '-p', '--preprocessor'],
  cluster: true,
};
// tcpdump runs `-z` on each file it rotates (after -C/-G).
OPTION_PROGRAMS.tcpdump = {
  code: ['-z'],
  chooses: ['-Z', '--relinquish-privileges', '-F', '-M'],
  values: ['-i', '--interface', '-w', '-r', '-c', '-s', '--snapshot-length', '-C', '-G', '-W', '-E', '-T', '-y', '--linktype', '-B', '--buffer-size', '-j', '--time-stamp-type', '-Q', '--direction', '-V', '--time-stamp-precision', '--count'],
  cluster: true,
};

type Role = { kind: 'code' | 'chooses'; option: string } | { kind: 'value' } | { kind: 'operand'; code: boolean; beforeDashes: boolean } | { kind: 'option' };

/** What each word after the program at `p` is to the program: an option, an option's value (of which kind), an operand. */
function roles(w: readonly string[], p: number, spec: OptionProgram): Role[] {
  const code = new Set(spec.code);
  const chooses = new Set(spec.chooses ?? []);
  const values = new Set(spec.values ?? []);
  const valued = (o: string): Role | null => (code.has(o) ? { kind: 'code', option: o } : chooses.has(o) ? { kind: 'chooses', option: o } : values.has(o) ? { kind: 'value' } : null);
  const out: Role[] = [];
  let k = p + 1;
  let dashes = false;
  let operands = 0;
  // The valued letters of a cluster whose values are the next words, in turn (tar's old style).
  const pending: Role[] = [];
  if (spec.oldStyle && k < w.length && !w[k]!.startsWith('-') && !w[k]!.includes(MARK)) {
    out[k] = { kind: 'option' };
    for (const letter of w[k]!) {
      const r = valued(`-${letter}`);
      if (r) pending.push(r);
    }
    k++;
    for (; pending.length > 0 && k < w.length; k++) out[k] = pending.shift()!;
  }
  while (k < w.length) {
    const o = w[k]!;
    if (!dashes && o === '--') {
      out[k++] = { kind: 'option' };
      dashes = true;
      continue;
    }
    if (dashes || !o.startsWith('-') || o === '-') {
      out[k++] = { kind: 'operand', code: spec.codeOperandsFrom !== undefined && operands >= spec.codeOperandsFrom, beforeDashes: !dashes };
      operands++;
      continue;
    }
    // An option (one holding a placeholder too: the value could make it any option).
    const long = o.startsWith('--') || spec.singleDashLong === true;
    const eq = long ? o.indexOf('=') : -1;
    const written = eq < 0 ? o : o.slice(0, eq);
    const name = spec.singleDashLong && written.startsWith('--') ? written.slice(1) : written;
    const whole = valued(name);
    if (whole) {
      out[k] = eq < 0 ? { kind: 'option' } : whole;
      if (eq < 0 && k + 1 < w.length) out[k + 1] = whole;
      k += eq < 0 ? 2 : 1;
      continue;
    }
    out[k] = { kind: 'option' };
    let next = k + 1;
    if (!long && spec.cluster) {
      for (let j = 1; j < o.length; j++) {
        const r = valued(`-${o[j]}`);
        if (!r) continue;
        // The rest of the word is the value, or else the next word is.
        if (j + 1 < o.length) out[k] = r;
        else if (next < w.length) out[next++] = r;
        break;
      }
    }
    k = next;
  }
  return out;
}

/** Why the word at `at` is read again by the program at `p`, one of OPTION_PROGRAMS, or null. */
export function fromOptions(w: readonly string[], p: number, at: number, name: string, spec: OptionProgram): Reason | null {
  const role = roles(w, p, spec)[at];
  if (!role) return null;
  if (role.kind === 'code') return { kind: 'code', why: `is the value of ${name} ${role.option}, which ${name} runs as code (a shell command line, or SQL)` };
  if (role.kind === 'chooses') return { kind: 'chooses', why: `is the value of ${name} ${role.option}, which names what ${name} runs` };
  if (role.kind === 'option') return { kind: 'chooses', why: `stands in an option of ${name}, where a value could make it an option that runs code` };
  if (role.kind === 'operand' && role.code) return { kind: 'code', why: `is an operand of ${name} that it runs as code (SQL, or its own commands)` };
  if (role.kind === 'operand' && role.beforeDashes) {
    return { kind: 'chooses', why: `is an operand of ${name} before --, and ${name} takes options among its operands: a value such as ${spec.code[0]}=… would run; put -- before it` };
  }
  return null;
}
