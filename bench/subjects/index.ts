/**
 * The subjects, each loaded on demand, so a case child imports only the library it measures.
 */

import type { Subject } from '../support/types.js';

export const subjects = {
  map: () => import('./map-bucket.js'),
  'map-decision': async () => ({ subject: (await import('./map-bucket.js')).decisionSubject }),
  floodgate: () => import('./floodgate.js'),
  fastify: () => import('./fastify.js'),
  express: () => import('./express.js'),
  rlf: () => import('./rate-limiter-flexible.js'),
  limiter: () => import('./limiter.js'),
} satisfies Record<string, () => Promise<{ subject: Subject }>>;

export type SubjectId = keyof typeof subjects;

export function isSubjectId(id: string): id is SubjectId {
  return Object.hasOwn(subjects, id);
}

/** loadSubject imports one subject's module. */
export async function loadSubject(id: string): Promise<Subject> {
  if (!isSubjectId(id))
    throw new Error(`unknown subject ${JSON.stringify(id)}; known: ${Object.keys(subjects).join(', ')}`);
  return (await subjects[id]()).subject;
}
