import type http from 'node:http';

/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): the client sends the content only after a 100
 * (Continue), so that a server refusing the request from its head alone can say so before
 * megabytes are on the wire. node:http answers 100 as soon as the head arrives unless the
 * server listens for 'checkContinue'; a body over the limit was then sent anyway, and the
 * connection reset under it before the client read the 413.
 *
 * Here the 100 is sent when the body is first read, and only then: the app answers everything
 * it decides from the head (413 from Content-Length over the route's body limit, 401, 404,
 * 415) without a 100, and node:http closes such a connection after the answer (the client may
 * still send the content). Nothing changes for requests without the expectation.
 */
export function continueOnFirstRead(server: http.Server): void {
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const own = Object.getPrototypeOf(req) as { _read(n: number): void };
    let asked = false;
    // A Readable calls _read when its consumer wants data: a parser reading the body, a stream
    // piped somewhere, or node:http discarding an unread body after the answer (then too late).
    (req as unknown as { _read(n: number): void })._read = function (this: http.IncomingMessage, n: number) {
      if (!asked) {
        asked = true;
        if (!res.headersSent && !res.writableEnded) res.writeContinue();
      }
      own._read.call(this, n);
    };
    server.emit('request', req, res);
  });
}
