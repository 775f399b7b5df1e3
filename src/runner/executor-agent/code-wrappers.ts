/**
 * Programs that run another command (the rest of their arguments, or a command after a
 * subcommand): timeout, sudo, env, xargs, prlimit, numactl …, and the run/exec subcommands of
 * container and cluster command lines (`docker run IMAGE CMD`, `kubectl exec POD -- CMD`). The
 * command they run is checked as if it stood there (code-arguments.ts). Best effort: a wrapper
 * not listed here is not looked through.
 */

export interface Wrapper {
  /** Options that take a value (the next word unless attached with `=` or to a one-letter option). */
  values?: string[];
  /** Operands before the command (timeout's duration, chroot's directory, flock's file). */
  operands?: number;
  /** Options whose value is a command line for a shell (`flock -c`, `script -c`, `env -S`). */
  code?: string[];
  /** Options after which all remaining words are a command line for a shell (`sudo -s`). */
  shellRest?: string[];
  /** `NAME=VALUE` words before the command are environment assignments (env, sudo). */
  assignments?: boolean;
  /** Runs no command of its own (script runs a shell; only its -c is code). */
  noCommand?: boolean;
  /** Options whose value names what runs or loads (an image, an entrypoint, a remote shell). */
  chooses?: string[];
  /** Options whose value is `NAME=VALUE` for the command's environment (`docker run -e`). */
  env?: string[];
  /** Options whose value is plain data, never read again (`docker run --name`, `kubectl exec -c`). */
  data?: string[];
}

/** Programs that run the rest of their arguments as a command: the command is checked as if it stood there. */
export const WRAPPERS: Record<string, Wrapper> = {
  command: {},
  exec: { values: ['-a'] },
  builtin: {},
  time: { values: ['-f', '--format', '-o', '--output'] },
  nohup: {},
  setsid: {},
  nice: { values: ['-n', '--adjustment'] },
  ionice: { values: ['-c', '--class', '-n', '--classdata', '-t'] },
  chrt: { operands: 1 },
  taskset: { operands: 1 },
  stdbuf: { values: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  timeout: { values: ['-s', '--signal', '-k', '--kill-after'], operands: 1 },
  chroot: { values: ['--userspec', '--groups'], operands: 1 },
  env: { values: ['-u', '--unset', '-C', '--chdir'], code: ['-S', '--split-string'], assignments: true },
  sudo: { values: ['-u', '--user', '-g', '--group', '-C', '--close-from', '-D', '--chdir', '-h', '--host', '-p', '--prompt', '-r', '--role', '-t', '--type', '-T', '--command-timeout', '-U', '--other-user', '-R', '--chroot'], shellRest: ['-s', '--shell', '-i', '--login'], assignments: true },
  doas: { values: ['-u', '-C'], shellRest: ['-s'] },
  runuser: { values: ['-u', '--user', '-g', '--group', '-G', '--supp-group', '-s', '--shell', '-w', '--whitelist-environment'], code: ['-c', '--command', '--session-command'] },
  pkexec: { values: ['--user'] },
  gosu: { operands: 1 },
  'su-exec': { operands: 1 },
  setpriv: {},
  flock: { values: ['-w', '--wait', '--timeout', '-E', '--conflict-exit-code'], operands: 1, code: ['-c', '--command'] },
  script: { values: ['-E', '--echo', '-I', '--log-in', '-O', '--log-out', '-B', '--log-io', '-T', '--log-timing', '-m', '--logging-format', '-o', '--output-limit'], code: ['-c', '--command'], noCommand: true },
  xargs: { values: ['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '--max-lines', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars', '--process-slot-var'] },
  unshare: {},
  nsenter: { values: ['-t', '--target'] },
  'systemd-run': { values: ['-u', '--unit', '-p', '--property', '-E', '--setenv', '--uid', '--gid', '-M', '--machine', '--slice', '--description', '--working-directory'] },
  'xvfb-run': { values: ['-n', '--server-num', '-s', '--server-args', '-e', '--error-file', '-f', '--auth-file', '-p'] },
  setarch: { operands: 1 },
  faketime: { operands: 1 },
  strace: { values: ['-o', '-e', '-p', '-s', '-u', '-E', '-P'] },
  ltrace: { values: ['-o', '-e', '-p', '-s', '-u'] },
  cgexec: { values: ['-g'] },
  busybox: {},
  toybox: {},
  coproc: {},
  fakeroot: {},
  eatmydata: {},
  proxychains: {},
  proxychains4: {},
  torsocks: {},
  'dbus-run-session': {},
  'ssh-agent': {},
  catchsegv: {},
  valgrind: {},
  firejail: {},
  prlimit: { values: ['-p', '--pid', '-o', '--output'] },
  numactl: {
    values: ['-i', '--interleave', '-p', '--preferred', '-P', '--preferred-many', '-m', '--membind', '-N', '--cpunodebind', '-C', '--physcpubind', '-w', '--weighted-interleave'],
  },
  unbuffer: {},
  cpulimit: { values: ['-l', '--limit', '-p', '--pid', '-e', '--exe'] },
};

/** A command line tool whose subcommands run a command (docker run, kubectl exec). */
export interface Runner {
  /** Options of the tool (and of its command groups) that take a value. */
  globals: string[];
  /** Command groups that come before a subcommand (`docker container run`, `docker compose run`). */
  groups: string[];
  /** Subcommands that run a command, as the words that name them, with how their options read. */
  commands: Record<string, Wrapper>;
}

const CONTAINER_ENV = ['-e', '--env'];
const CONTAINER_DATA = ['--name', '-l', '--label', '--hostname', '-h', '--restart', '--stop-signal', '--stop-timeout', '--pull', '--platform', '--cidfile', '--log-opt', '--log-driver', '-m', '--memory', '--cpus', '--shm-size', '--ulimit', '--detach-keys'];
/** `docker run` / `create`: the image is an operand before the command; `--entrypoint` and mounts choose what runs. */
const CONTAINER_RUN: Wrapper = {
  values: ['-v', '--volume', '--mount', '-w', '--workdir', '-u', '--user', '--network', '--net', '-p', '--publish', '--env-file', '--device', '--cap-add', '--cap-drop', '--security-opt', '--tmpfs', '--add-host', '--dns', '--gpus', '--ipc', '--pid', '--runtime', '--group-add', '--volumes-from', '--label-file', '--cgroupns', '--userns', '--uts'],
  chooses: ['--entrypoint'],
  code: ['--health-cmd'],
  env: CONTAINER_ENV,
  data: CONTAINER_DATA,
  operands: 1,
};
/** `docker exec CONTAINER CMD`. */
const CONTAINER_EXEC: Wrapper = { values: ['-u', '--user', '-w', '--workdir', '--env-file'], env: CONTAINER_ENV, data: ['--detach-keys'], operands: 1 };
/** `docker compose run SERVICE CMD` / `exec`. */
const COMPOSE_RUN: Wrapper = { values: ['-u', '--user', '-w', '--workdir', '-v', '--volume', '-p', '--publish'], chooses: ['--entrypoint'], env: CONTAINER_ENV, data: ['--name', '-l', '--label', '--index'], operands: 1 };
const DOCKER: Runner = {
  globals: ['-H', '--host', '-c', '--context', '--config', '-l', '--log-level', '--tlscacert', '--tlscert', '--tlskey', '--connection', '--url', '--root', '--runroot', '-f', '--file', '-p', '--project-name', '--profile', '--env-file', '--project-directory', '--ansi', '--progress', '--parallel'],
  groups: ['container', 'compose'],
  commands: { run: CONTAINER_RUN, create: CONTAINER_RUN, 'container run': CONTAINER_RUN, 'container create': CONTAINER_RUN, exec: CONTAINER_EXEC, 'container exec': CONTAINER_EXEC, 'compose run': COMPOSE_RUN, 'compose exec': COMPOSE_RUN },
};
/** `kubectl exec POD -- CMD`, `kubectl run NAME --image=IMAGE -- CMD`, `kubectl debug …  -- CMD`. */
const KUBECTL: Runner = {
  globals: ['-n', '--namespace', '--context', '--kubeconfig', '-s', '--server', '--cluster', '--user', '--token', '--as', '--as-group', '--request-timeout', '-v', '--cache-dir'],
  groups: [],
  commands: {
    exec: { values: ['-f', '--filename'], data: ['-c', '--container', '--pod-running-timeout', '-n', '--namespace', '--context'], operands: 1 },
    run: { values: ['--overrides', '--serviceaccount'], chooses: ['--image'], env: ['--env'], data: ['-l', '--labels', '--port', '--restart', '--image-pull-policy', '-n', '--namespace', '--annotations'], operands: 1 },
    debug: { values: ['--target', '--profile', '--custom'], chooses: ['--image'], env: ['--env'], data: ['-c', '--container', '--copy-to', '-n', '--namespace'], operands: 1 },
  },
};
/** The standalone Compose v1 binary: `docker-compose run|exec SERVICE CMD`, as `docker compose`. */
const COMPOSE: Runner = { globals: DOCKER.globals, groups: [], commands: { run: COMPOSE_RUN, exec: COMPOSE_RUN } };
export const RUNNERS: Record<string, Runner> = { docker: DOCKER, podman: DOCKER, nerdctl: DOCKER, 'docker-compose': COMPOSE, 'podman-compose': COMPOSE, kubectl: KUBECTL, oc: KUBECTL };
