/** Enumerations of spec section 2.5, in their canonical spellings (docs/api.md, "Records"). */
export const LOAD_STATUSES = [
  'ACTIVE',
  'TENDERED',
  'TENDER_ACCEPTED',
  'SPOT',
  'COVERED',
  'DISPATCHED',
  'AT_SHIPPER',
  'EN_ROUTE',
  'AT_RECEIVER',
  'DELIVERED',
  'PAYMENT_PROCESSING',
  'ACCOUNTING_REVIEW',
  'COMPLETED',
  'CANCELLED',
  'TENDER_REJECTED',
  'INACTIVE',
  'ON_HOLD',
] as const;

export const EQUIPMENT_TYPES = [
  'DRY_VAN',
  'REEFER',
  'FLATBED',
  'FLATBED_CONESTOGA',
  'STEPDECK',
  'STEPDECK_CONESTOGA',
  'LOWBOY',
  'REMOVABLE_GOOSENECK',
  'TANKER',
  'INTERMODAL',
  'STRAIGHT',
  'SPRINTER',
  'HOTSHOT',
  'POWER_ONLY',
  'BULK_DRY_HOPPER',
  'BULK_DRY_PNEUMATIC',
  'BULK_DRY_DUMP',
] as const;

export const TRANSPORT_MODES = ['FTL', 'PTL', 'LTL'] as const;

/** Returned as the published samples spell them; accepted in any case (PICKUP, pickup, Pickup). */
export const STOP_TYPES = ['Pickup', 'Delivery', 'Both'] as const;

export const RATE_ENTITIES = ['CUSTOMER', 'CARRIER'] as const;
export const RATE_TYPES = ['LINEHAUL', 'FUEL_SURCHARGE', 'ACCESSORIAL', 'OTHER'] as const;
export const WEIGHT_UOMS = ['lbs', 'kg'] as const;

/** Delivered, and the statuses that come after delivery: these loads are lane history (docs/api.md, "Lane history and carrier recommendations"). */
export const DELIVERED_STATUSES: ReadonlySet<string> = new Set(['DELIVERED', 'PAYMENT_PROCESSING', 'ACCOUNTING_REVIEW', 'COMPLETED']);

/** Loads still looking for a carrier: these show recommendations. */
export const OPEN_STATUSES: ReadonlySet<string> = new Set(['ACTIVE', 'SPOT', 'TENDERED', 'TENDER_REJECTED']);

export const isPickup = (t: string) => t === 'Pickup' || t === 'Both';
export const isDelivery = (t: string) => t === 'Delivery' || t === 'Both';

/** Loads on their way to delivery, whose delivery may be a backhaul (docs/api.md, "Stop actuals, tracking events and recommendation evidence"): the partial index loads_backhaul_idx holds exactly these. */
export const BACKHAUL_STATUSES = ['COVERED', 'DISPATCHED', 'AT_SHIPPER', 'EN_ROUTE', 'AT_RECEIVER'] as const;
