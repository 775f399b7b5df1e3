// Minimal types for the parts of autocannon the benchmarks use (the package ships none).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    errors: number;
    non2xx: number;
    timeouts: number;
    /** Responses that verifyBody rejected. */
    mismatches: number;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    requests?: Record<string, unknown>[];
    setupClient?: (client: never) => void;
    /** Called with each response body; false counts a mismatch. */
    verifyBody?: (body: string) => boolean;
  }
  export default function autocannon(options: Options): Promise<Result>;
}
