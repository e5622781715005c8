/**
 * What the concurrency adapters on node:http share (node, Express, Fastify, Koa): holding a
 * permit until node's response closes, and answering a shed request on it.
 */
import type { ServerResponse } from 'node:http';
import type { Admission } from '../../overload/concurrency-limiter.js';
import { CallHold } from '../call-hold.js';
import type { ConcurrencyGate, ShedResponse } from '../overload-gate.js';
import type { HttpRequest } from '../request.js';
import type { NodeNext } from './node-request.js';

/**
 * holdResponse returns the {@link CallHold} of a request answered on `res`: it ends when `res`
 * closes, after the response finished or when the connection dropped first (the client left),
 * and at once when `res` has closed already.
 */
export function holdResponse(res: ServerResponse): CallHold {
  const hold = new CallHold();
  const end = (): void => hold.end({ statusCode: res.statusCode, completed: res.writableFinished });
  if (res.closed) end();
  else res.once('close', end);
  return hold;
}

/** sendShed answers a shed request on `res`: its status, `Retry-After` and problem+json body. */
export function sendShed(res: ServerResponse, answer: ShedResponse): void {
  res.statusCode = answer.statusCode;
  for (const [name, value] of answer.headers) res.setHeader(name, value);
  res.end(answer.body);
}

/**
 * admitConnectStyle applies `gate` to one request Connect-style (node:http, Express): `next()`
 * once a permit is held (until `res` closes), the shed answer on `res` otherwise, and `next(err)`
 * when `tierOf` fails. A client that leaves while waiting ends its wait, and is answered nothing.
 */
export function admitConnectStyle<Req>(
  gate: ConcurrencyGate<Req>,
  view: HttpRequest<Req> | undefined,
  res: ServerResponse,
  next: NodeNext,
): void {
  const hold = holdResponse(res);
  let admission: Admission | Promise<Admission>;
  try {
    admission = gate.admit(view, gate.mayWait ? hold.signal : undefined);
  } catch (err) {
    next(err);
    return;
  }
  // The limiter's promise never rejects: load is answered with a Shed.
  if (admission instanceof Promise) void admission.then((a) => proceed(gate, a, hold, res, next));
  else proceed(gate, admission, hold, res, next);
}

function proceed<Req>(
  gate: ConcurrencyGate<Req>,
  admission: Admission,
  hold: CallHold,
  res: ServerResponse,
  next: NodeNext,
): void {
  if (!admission.allowed) {
    if (!hold.endedEarly) sendShed(res, gate.refusal(admission));
  } else if (hold.take(admission)) {
    next();
  }
}
