import type { TSchema } from '@sinclair/typebox';
import { PaginationSchema } from '../lib/http/pagination.js';
import { BatchResultSchema } from '../modules/shared/batch.js';
import { Address, Carrier, CarrierPage, Contact } from '../modules/carriers/carriers.schema.js';
import { Customer, CustomerPage } from '../modules/customers/customers.schema.js';
import { Location, LocationPage } from '../modules/locations/locations.schema.js';
import { CarrierRecommendation, Evidence } from '../modules/lanes/lanes.schema.js';
import { LanePoint, MarketRate, MarketRatePage } from '../modules/rates/rates.schema.js';
import { TrackingEventAnswer } from '../modules/tracking/tracking.schema.js';
import { FinancialRate, Load, LoadPage, Stop, TeamMember } from '../modules/loads/loads.schema.js';
import { LoadRecommendations } from '../modules/recommendations/recommendations.schema.js';
import { FeedEvent, EventPage } from '../modules/events/events.schema.js';
import { WEBHOOK_SCHEMAS } from '../modules/webhooks/webhooks.routes.js';
import { IMPORT_SCHEMAS } from '../modules/imports/imports.schema.js';
import { AuditEntry, AuditEntryPage } from '../modules/audit/audit.schema.js';

/** The OpenAPI document's shared component schemas (docs/api.md), in the document's order. */
export const API_SCHEMAS: TSchema[] = [
  PaginationSchema,
  BatchResultSchema,
  Customer,
  CustomerPage,
  Contact,
  Address,
  Carrier,
  CarrierPage,
  Location,
  LocationPage,
  Stop,
  FinancialRate,
  TeamMember,
  Evidence,
  CarrierRecommendation,
  Load,
  LoadPage,
  LoadRecommendations,
  TrackingEventAnswer,
  LanePoint,
  MarketRate,
  MarketRatePage,
  FeedEvent,
  EventPage,
  ...WEBHOOK_SCHEMAS,
  ...IMPORT_SCHEMAS,
  AuditEntry,
  AuditEntryPage,
];
