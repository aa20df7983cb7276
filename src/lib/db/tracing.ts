import { context, SpanKind } from '@opentelemetry/api';
import type { CompiledQuery, DatabaseConnection, Dialect as KyselyDialect, Driver } from 'kysely';
import { failed, hasActiveSpan, tracer } from '../telemetry/tracing.js';

/**
 * A span per statement on either engine, wrapped around Kysely's driver: every statement Kysely runs
 * (query builder, `sql` templates, CompiledQuery.raw, begin/commit/savepoints) passes through its
 * connection's executeQuery. No SQLite instrumentation exists, and a KyselyPlugin's transformResult is
 * never called for a statement that fails, so its span could not end: the driver sees both outcomes.
 *
 * A statement outside any span (the webhook worker's polls, retention sweeps) makes none: only work that
 * is traced (a request, a webhook attempt, an import chunk) gets its statements.
 */
export function tracedDialect(inner: KyselyDialect, system: 'sqlite' | 'postgresql'): KyselyDialect {
  return {
    createAdapter: () => inner.createAdapter(),
    createIntrospector: (db) => inner.createIntrospector(db),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createDriver: () => tracedDriver(inner.createDriver(), system),
  };
}

function tracedDriver(driver: Driver, system: 'sqlite' | 'postgresql'): Driver {
  const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
  const wrap = (connection: DatabaseConnection): DatabaseConnection => {
    let w = wrapped.get(connection);
    if (!w) {
      const traced = tracedExecute(connection, system);
      // Everything else (private release methods included) goes to the connection itself.
      w = new Proxy(connection, {
        get(target, prop) {
          if (prop === 'executeQuery') return traced;
          const v = Reflect.get(target, prop, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      wrapped.set(connection, w);
    }
    return w;
  };
  return new Proxy(driver, {
    get(target, prop) {
      if (prop === 'acquireConnection') return async () => wrap(await target.acquireConnection());
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

function tracedExecute(connection: DatabaseConnection, system: 'sqlite' | 'postgresql'): DatabaseConnection['executeQuery'] {
  const execute = connection.executeQuery.bind(connection);
  return async <R>(query: CompiledQuery) => {
    if (!hasActiveSpan()) return execute<R>(query);
    const { operation, collection } = describeStatement(query.sql);
    const span = tracer().startSpan(
      collection ? `${operation} ${collection}` : operation,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': system,
          'db.operation.name': operation,
          ...(collection ? { 'db.collection.name': collection } : {}),
          // The text with its placeholders: parameter values (names, addresses, keys' hashes) never leave.
          'db.query.text': query.sql,
        },
      },
      context.active(),
    );
    try {
      const result = await execute<R>(query);
      span.setAttribute('db.response.returned_rows', result.rows.length);
      return result;
    } catch (err) {
      failed(span, err);
      span.setAttribute('error.type', (err as { code?: string }).code ?? (err as Error)?.name ?? 'Error');
      throw err;
    } finally {
      span.end();
    }
  };
}

const KEYWORD = /^\s*(?:\/\*[\s\S]*?\*\/\s*)?([A-Za-z]+)/;
const TARGET = /\b(?:from|into|update|join)\s+("?)([A-Za-z_][\w]*)\1/i;

/** The statement's first keyword (SELECT, INSERT, WITH, BEGIN…) and the first table it names, for the span's name. */
export function describeStatement(text: string): { operation: string; collection: string | null } {
  const operation = (KEYWORD.exec(text)?.[1] ?? 'statement').toUpperCase();
  const leading = operation === 'UPDATE' ? /^\s*update\s+("?)([A-Za-z_]\w*)\1/i.exec(text) : null;
  const target = leading ?? TARGET.exec(text);
  return { operation, collection: target?.[2] ?? null };
}
