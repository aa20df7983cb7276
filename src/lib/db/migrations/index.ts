import type { Migration, MigrationProvider } from 'kysely';
import type { Dialect } from '../dialect.js';
import { migration0001 } from './0001_foundation.js';
import { migration0002 } from './0002_locations.js';
import { migration0003 } from './0003_loads.js';
import { migration0004 } from './0004_lanes_and_market_rates.js';
import { migration0006 } from './0006_load_counts_and_list_indexes.js';
import { migration0007 } from './0007_dashboard.js';
import { migration0008 } from './0008_lane_history_covering_index.js';
import { migration0009 } from './0009_org_versions.js';
import { migration0010 } from './0010_events.js';
import { migration0011 } from './0011_idempotency.js';
import { migration0012 } from './0012_webhooks.js';
import { migration0013 } from './0013_folded_search.js';
import { migration0014 } from './0014_usage.js';
import { migration0015 } from './0015_webhook_attempts.js';
import { migration0016 } from './0016_stop_actuals_evidence.js';
import { migration0017 } from './0017_imports.js';
import { migration0018 } from './0018_team_accounts.js';
import { migration0019 } from './0019_strict_handling.js';
import { migration0020 } from './0020_lane_carriers.js';
import { migration0021 } from './0021_delivery_deadline.js';
import { migration0022 } from './0022_lane_history_version.js';
import { migration0023 } from './0023_stop_rate_org_checks.js';
import { migration0024 } from './0024_audit_target_name.js';

/** Every migration, by the name the migrator records. A new one is a new file added last here. */
function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '0001_foundation': migration0001(dialect),
    '0002_locations': migration0002(dialect),
    '0003_loads': migration0003(dialect),
    '0004_lanes_and_market_rates': migration0004(dialect),
    '0006_load_counts_and_list_indexes': migration0006(dialect),
    '0007_dashboard': migration0007(dialect),
    '0008_lane_history_covering_index': migration0008(dialect),
    '0009_org_versions': migration0009(dialect),
    '0010_events': migration0010(dialect),
    '0011_idempotency': migration0011(dialect),
    '0012_webhooks': migration0012(dialect),
    '0013_folded_search': migration0013(dialect),
    '0014_usage': migration0014(dialect),
    '0015_webhook_attempts': migration0015(dialect),
    '0016_stop_actuals_evidence': migration0016(dialect),
    '0017_imports': migration0017(dialect),
    '0018_team_accounts': migration0018(dialect),
    '0019_strict_handling': migration0019(dialect),
    '0020_lane_carriers': migration0020(dialect),
    '0021_delivery_deadline': migration0021(dialect),
    '0022_lane_history_version': migration0022(dialect),
    '0023_stop_rate_org_checks': migration0023(dialect),
    '0024_audit_target_name': migration0024(dialect),
  };
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return { getMigrations: async () => migrations(dialect) };
}
