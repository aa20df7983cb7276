// Organizations, their users, API keys and dashboard sessions and settings, the audit log. Row shapes as stored (src/lib/db/types.ts).

export interface OrganizationsTable {
  id: string;
  name: string;
  /** Minutes of on-time grace; null: the ON_TIME_GRACE_MINUTES default. */
  on_time_grace_minutes?: number | null;
  created_at: string;
}

export interface TmsIntegrationsTable {
  org_id: string;
  connected_at: string;
}

export interface UsersTable {
  id: string;
  org_id: string;
  email: string;
  email_lower: string;
  name: string;
  password_hash: string | null;
  created_at: string;
  /** `admin` or `member`. */
  role: string;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string;
  external_system: string;
  key_hash: string;
  key_prefix: string;
  scopes: string;
  per_minute: number;
  per_day: number;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  replaced_by_key_id: string | null;
  /** null when the key never expires. */
  expires_at: string | null;
  /** 1 when every request of the key is handled strictly. */
  strict: number;
}

/** A dashboard sign-in session (the cookie carries the token; `id` is its SHA-256). */
export interface DashboardSessionsTable {
  id: string;
  org_id: string;
  user_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

export interface DashboardSettingsTable {
  name: string;
  value: string;
  created_at: string;
}

export interface AuditLogTable {
  id: string;
  org_id: string;
  at: string;
  action: string;
  actor_type: string;
  actor_id: string | null;
  actor_name: string;
  target_type: string;
  target_id: string;
  /** What the target was called then (a removed user's name and email); null when not recorded. */
  target_name?: string | null;
  ip: string | null;
}
