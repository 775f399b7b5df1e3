import { ConcurrencyLimit } from '../../infra/concurrency-limit.js';

export { ConcurrencyLimit };

/** wait_for_run calls at once: per user, and in the process. */
export const WAITS = new ConcurrencyLimit(8, 256);
/** Resource reads at once (each holds up to 2 MiB, and its answer more): per user, and in the process. */
export const RESOURCE_READS = new ConcurrencyLimit(4, 16);
