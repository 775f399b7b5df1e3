import { UsageError } from '../infra/errors.js';

type TtyInput = NodeJS.ReadStream & { setRawMode(mode: boolean): unknown };

/**
 * Asks for a secret on a terminal without echoing it: raw mode, so the terminal shows nothing
 * of what is typed (backspace edits, Enter ends, Ctrl-C or Ctrl-D on an empty line cancels).
 */
export function readHidden(prompt: string, input: TtyInput = process.stdin as TtyInput, output: NodeJS.WritableStream = process.stderr): Promise<string> {
  // Raw mode first: a line typed ahead of the prompt must not be echoed either.
  input.setRawMode(true);
  output.write(prompt);
  input.setEncoding('utf8');
  input.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = () => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      output.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') {
          finish();
          resolve(value);
          return;
        }
        if (ch === '\u0003' || (ch === '\u0004' && value === '')) {
          finish();
          reject(new UsageError('cancelled'));
          return;
        }
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
    };
    input.on('data', onData);
  });
}

/** A new password typed twice on a terminal; the two must match. */
export async function readNewPassword(): Promise<string> {
  const first = await readHidden('password: ');
  const second = await readHidden('password (again): ');
  if (first !== second) throw new UsageError('the two passwords do not match');
  return first;
}
