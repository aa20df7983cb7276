// The parts of autocannon's API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      body?: string;
      headers?: Record<string, string>;
      setupRequest?: (req: Request) => Request;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      /** Requests to send in all, instead of a duration. */
      amount?: number;
      requests?: Request[];
      timeout?: number;
    }
    interface Result {
      requests: { total: number; average: number };
      latency: { p50: number; p99: number };
      errors: number;
      timeouts: number;
      non2xx: number;
    }
  }
  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): EventEmitter;
  export default autocannon;
}
