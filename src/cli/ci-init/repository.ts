/**
 * The repository's name on GitHub or GitLab, read from its `origin` remote, so the next steps
 * can print the exact `pier staff trust add` line. Best effort: null when there is no git, no
 * remote or a host we do not recognise (the line then shows a placeholder).
 */
import { execFileSync } from 'node:child_process';

export function originUrl(dir: string): string | null {
  try {
    const url = execFileSync('git', ['-C', dir, 'config', '--get', 'remote.origin.url'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
    return url || null;
  } catch {
    return null;
  }
}

/**
 * `owner/repo` (GitHub) or `group/sub/project` (GitLab) from a remote URL:
 * `git@github.com:o/r.git`, `https://github.com/o/r`, `ssh://git@gitlab.example.com/g/p.git`.
 */
export function repositoryPath(url: string): { host: string; path: string } | null {
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(url);
  let host: string;
  let rest: string;
  if (scp && !/^[a-z+]+:\/\//i.test(url)) {
    host = scp[1]!;
    rest = scp[2]!;
  } else {
    try {
      const u = new URL(url);
      host = u.hostname;
      rest = u.pathname;
    } catch {
      return null;
    }
  }
  const path = rest.replace(/^\/+/, '').replace(/\/+$/, '').replace(/\.git$/, '');
  if (!/^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)+$/.test(path)) return null;
  return { host: host.toLowerCase(), path };
}
