import { AttemptCut, type CutReason } from './attempt.js';

/** Deliveries sent at once by one process, all organizations together. */
export const MAX_IN_FLIGHT = 64;
/** Of those, the most one organization's endpoints may hold: one organization never takes them all. */
export const MAX_IN_FLIGHT_PER_ORG = 16;

/** A due delivery the claim may take (oldest due first). */
export interface DueCandidate {
  id: string;
  endpoint_id: string;
  org_id: string;
}

/** What one dispatch starts: an endpoint's chain and the deliveries to claim for it (sequence order). */
export interface ChainPick {
  endpointId: string;
  orgId: string;
  ids: string[];
}

/**
 * One endpoint's run of claimed deliveries in this process, one attempt at a time (its slot). It can be
 * cut (the process stopping, the endpoint deleted or disabled): the attempt in flight is aborted at
 * once and the rest is not sent.
 */
export class Chain {
  cut: CutReason | null = null;
  private control: AbortController | null = null;
  constructor(
    readonly endpointId: string,
    readonly orgId: string,
  ) {}

  /** The controller of the chain's next attempt. */
  nextAttempt(): AbortController {
    this.control = new AbortController();
    if (this.cut) this.control.abort(new AttemptCut(this.cut));
    return this.control;
  }

  stop(reason: CutReason): void {
    if (this.cut) return;
    this.cut = reason;
    this.control?.abort(new AttemptCut(reason));
  }
}

/**
 * The in-flight slots of a process: at most `total` chains at once, at most `perOrg` of one
 * organization, one per endpoint (an endpoint's deliveries go in sequence order). The worker asks which
 * due deliveries to start (`choose`), opens a chain per endpoint picked and closes it when done.
 */
export function deliverySlots(limits: { total: number; perOrg: number }) {
  const chains = new Map<string, Chain>();
  const perOrg = new Map<string, number>();

  return {
    limits,
    /** Chains that may still start. */
    room: () => limits.total - chains.size,
    size: () => chains.size,
    /** Endpoints with a chain here (the claim leaves them out). */
    busyEndpoints: () => [...chains.keys()],
    /** Organizations at their share (the claim leaves them out). */
    fullOrgs: () => [...perOrg].filter(([, n]) => n >= limits.perOrg).map(([org]) => org),
    /** Chains in flight per organization (tests, metrics). */
    byOrg: () => new Map(perOrg),

    /**
     * From due deliveries, oldest first, the endpoints to start now: an endpoint with a chain here is
     * left for that chain; a new endpoint is taken while there is room overall and in its
     * organization's share; each gets at most `rowsPerChain` of its deliveries.
     */
    choose(candidates: readonly DueCandidate[], rowsPerChain: number): ChainPick[] {
      const picked = new Map<string, ChainPick>();
      const taken = new Map(perOrg);
      const room = limits.total - chains.size;
      for (const c of candidates) {
        let pick = picked.get(c.endpoint_id);
        if (!pick) {
          if (chains.has(c.endpoint_id) || picked.size >= room) continue;
          const n = taken.get(c.org_id) ?? 0;
          if (n >= limits.perOrg) continue;
          taken.set(c.org_id, n + 1);
          pick = { endpointId: c.endpoint_id, orgId: c.org_id, ids: [] };
          picked.set(c.endpoint_id, pick);
        }
        if (pick.ids.length < rowsPerChain) pick.ids.push(c.id);
      }
      return [...picked.values()];
    },

    open(endpointId: string, orgId: string): Chain {
      const chain = new Chain(endpointId, orgId);
      chains.set(endpointId, chain);
      perOrg.set(orgId, (perOrg.get(orgId) ?? 0) + 1);
      return chain;
    },

    close(chain: Chain): void {
      if (chains.get(chain.endpointId) !== chain) return;
      chains.delete(chain.endpointId);
      const n = (perOrg.get(chain.orgId) ?? 1) - 1;
      if (n > 0) perOrg.set(chain.orgId, n);
      else perOrg.delete(chain.orgId);
    },

    /** Cuts the endpoint's chain, if it has one here. */
    cut(endpointId: string, reason: CutReason): boolean {
      const chain = chains.get(endpointId);
      chain?.stop(reason);
      return chain !== undefined;
    },

    cutAll(reason: CutReason): void {
      for (const chain of chains.values()) chain.stop(reason);
    },
  };
}
