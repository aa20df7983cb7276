/**
 * A turn of the event loop: what is waiting (a request's bytes read, a timer) runs before the caller
 * goes on. Background work and long loops of microtasks (a batch's items, an import's rows) take one
 * between their steps, so requests beside them are read and answered.
 */
export const yieldToEventLoop = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
