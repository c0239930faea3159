/**
 * Work a public form does after its answer. "Forgot your password" and
 * sign-up answer the same page whether or not the email has a user; had
 * they looked it up and written its link before answering, the answer's
 * time would tell (a few database writes for one kind of address, none for
 * the other). So the answer goes first, and the lookup, the link and the
 * mail follow, one task at a time in the order of the answers (a newer link
 * for an email replaces the older one, as it would have within the
 * requests). A failure is logged: the person, told a mail is on its way,
 * asks again when none comes. Closing the server waits for what is queued.
 */
import type { FastifyInstance } from 'fastify';

export type AfterAnswer = (what: string, task: () => Promise<void>) => void;

export function afterAnswer(app: FastifyInstance): AfterAnswer {
  let chain: Promise<void> = Promise.resolve();
  app.addHook('onClose', async () => {
    await chain;
  });
  return (what, task) => {
    chain = chain.then(task).catch((error: unknown) => app.log.warn({ err: error }, what));
  };
}
