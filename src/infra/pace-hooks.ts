import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError } from './errors.js';
import { FairTurns } from './fair-turns.js';
import type { HttpApp } from './http.js';
import { Pacer } from './pace.js';

export interface PacingSettings {
  /** Requests a second one caller is served, sustained (RUNNER_CALLER_RATE, PIER_CALLER_RATE). */
  rate: number;
  /** Requests one caller may make at once after a pause (…_CALLER_BURST). */
  burst: number;
  /** Requests of one caller that may wait for their token; more get 429 (…_CALLER_QUEUE). */
  queue: number;
}

/** Who a request is for pacing, and whether it is paced at all. */
export interface Callers {
  /** The caller whose bucket and turn a request takes. */
  of(req: FastifyRequest): string;
  /** Requests that take turns but are not paced (an operator's trusted key). */
  unpaced(req: FastifyRequest): boolean;
}

/**
 * A request takes one token, and its answer one more for each further this many characters: the
 * serializing and the garbage of an answer grow with its length (a page of 200 schedules costs
 * the loop some 20 times what `GET /api/me` does), so a caller is paced by the work it causes,
 * not only by how many requests it makes. Files and streamed answers (live logs) are not counted.
 */
export const ANSWER_CHARS_PER_TOKEN = 16 * 1024;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Tokens a request of this route takes, where it costs the loop several small requests' work
     * whatever its answer (an upload: a file written and hashed, rows in a transaction, a
     * worker's read of the archive). Default 1.
     */
    paceTokens?: number;
  }
  interface FastifyRequest {
    /**
     * Charges `chars` characters more of a long-lived answer (a live stream) to the request's
     * caller, as a long answer is charged; returns the milliseconds to wait before writing more
     * (0: go on). Null for unpaced callers and in apps without pacing.
     */
    paceSent: ((chars: number) => number) | null;
  }
}

/**
 * How much and in which order callers are served on a serving loop, as an onRequest hook after
 * authentication where there is one (it needs to know whose request it is, `callers.of`) and an
 * onSend hook that charges long answers:
 *  - how much: each caller's requests are paced to its bucket (infra/pace.ts), so a client
 *    looping over lists as fast as it is answered is served at the rate, and the garbage its
 *    answers make (the collector's pauses are everyone's) stays bounded by the rate, not by how
 *    fast the loop can go; a long answer takes more tokens (ANSWER_CHARS_PER_TOKEN). Requests
 *    without a token wait on a timer; past the queue, 429 with Retry-After (when the caller
 *    would start again without waiting).
 *  - in which order: requests that may start take turns round robin (infra/fair-turns.ts), so
 *    one caller's burst does not run back to back ahead of another caller's request.
 * Unpaced requests (the runner's admin key: executors' claims, heartbeats and log batches, paced
 * by the executors' own back-off) take turns but are not paced. A long-lived answer (a live log
 * stream) is one request: it takes one token when it starts, and one per 16 Ki characters it
 * writes (`req.paceSent`), waiting for them as a request waits for its token. A route whose requests cost more
 * whatever they answer declares how many tokens (`paceTokens`: uploads).
 */
export function paceCallers(app: HttpApp, settings: PacingSettings, callers: Callers, clock?: () => number): void {
  const pacer = new Pacer({ rate: settings.rate, burst: settings.burst, maxWaiting: settings.queue }, clock);
  const turns = new FairTurns();
  app.decorateRequest('paceSent', null);
  app.addHook('onRequest', (req, _reply, done) => {
    const caller = callers.of(req);
    if (!callers.unpaced(req)) {
      req.paceSent = (chars) => {
        pacer.charge(caller, Math.floor(chars / ANSWER_CHARS_PER_TOKEN));
        return pacer.delay(caller);
      };
    }
    const start = () => {
      const waiting = turns.turn(caller);
      if (waiting) void waiting.then(() => done());
      else done();
    };
    if (callers.unpaced(req)) {
      start();
      return;
    }
    const pace = pacer.take(caller);
    const tokens = req.routeOptions.config?.paceTokens ?? 1;
    // The rest of a costly request's tokens are owed by the caller's next requests.
    if (!('refused' in pace) && tokens > 1) pacer.charge(caller, tokens - 1);
    if ('refused' in pace) {
      done(
        new TooManyRequestsError(
          `${settings.queue} of your requests are already waiting: each caller is served ${settings.rate} requests a second (after a burst of ${settings.burst}); try again after Retry-After seconds`,
          pace.retryAfterMs / 1000,
        ),
      );
    } else if (pace.wait > 0) setTimeout(start, pace.wait);
    else start();
  });
  app.addHook('onSend', (req, _reply, payload, done) => {
    // A string was built for this request (serialized JSON, rendered HTML); buffers (the UI's
    // files) and streams (live logs, outputs) are sent as they are.
    if (typeof payload === 'string' && payload.length > ANSWER_CHARS_PER_TOKEN && !callers.unpaced(req)) {
      pacer.charge(callers.of(req), Math.floor((payload.length - 1) / ANSWER_CHARS_PER_TOKEN));
    }
    done(null, payload);
  });
}
