import { tracingChannel } from 'node:diagnostics_channel';
import { SpanKind, type Span } from '@opentelemetry/api';
import { failed, hasActiveSpan, tracer } from './tracing.js';

/** What ioredis publishes on its `ioredis:command` tracing channel (its arguments already sanitized). */
interface CommandMessage {
  command: string;
  database?: number;
  serverAddress?: string;
  serverPort?: number;
  error?: unknown;
}

/**
 * A span per Redis command under the active span, from the `ioredis:command` diagnostics channel that
 * ioredis 6 publishes (no module patching). Commands outside any span make none. Returns the unsubscribe.
 */
export function traceRedisCommands(): () => void {
  const channel = tracingChannel<unknown, CommandMessage>('ioredis:command');
  const spans = new WeakMap<CommandMessage, Span>();
  const finish = (message: CommandMessage) => {
    const span = spans.get(message);
    if (!span) return;
    spans.delete(message);
    if (message.error !== undefined) failed(span, message.error);
    span.end();
  };
  const handlers = {
    start(message: CommandMessage) {
      if (!hasActiveSpan()) return;
      const operation = message.command.toUpperCase();
      spans.set(
        message,
        tracer().startSpan(operation, {
          kind: SpanKind.CLIENT,
          attributes: {
            'db.system.name': 'redis',
            'db.operation.name': operation,
            'db.namespace': String(message.database ?? 0),
            ...(message.serverAddress ? { 'server.address': message.serverAddress } : {}),
            ...(message.serverPort ? { 'server.port': message.serverPort } : {}),
          },
        }),
      );
    },
    end(message: CommandMessage) {
      // A command that threw before it was sent has no asynchronous end.
      if (message.error !== undefined) finish(message);
    },
    asyncStart() {},
    asyncEnd: finish,
    error() {},
  };
  channel.subscribe(handlers);
  return () => channel.unsubscribe(handlers);
}
