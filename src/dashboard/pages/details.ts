import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireSession, sendPage, type DashboardContext } from '../context.js';
import { count, hours, nearCity } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';
import { mapSvg } from '../map.js';
import { carrierPage } from './carrier.js';
import { lanePage } from './lane.js';
import { emptyState, listPath, loadTable } from './records.js';

/** Detail pages (issue 19): a location, a carrier, a customer and a lane (docs/dashboard.md, "Lanes and recommendation lanes"). */

async function locationPage(ctx: DashboardContext, orgId: string, ref: string) {
  const { location: loc, loads } = await ctx.services.insights.locationActivity(orgId, ref);
  const near = nearCity(loc);
  const body = html`<p><a href="/locations">← All locations</a></p>
<h1>${loc.name} <span class="muted">(${loc.external_reference_id})</span></h1>
<div class="split">
<section class="card" aria-labelledby="loc-facts">
<h2 id="loc-facts">Details</h2>
<dl class="facts">
  <dt>Address</dt><dd>${[loc.address_line1, loc.address_line2].filter(Boolean).join(', ') || '—'}<br>${[loc.city, loc.state, loc.postal_code, loc.country].filter(Boolean).join(', ')}${
    near ? html`<br><span data-near-city>${near}</span> <span class="muted">(the nearest city to its coordinates; no city was sent)</span>` : ''
  }</dd>
  <dt>Coordinates</dt><dd>${loc.latitude.toFixed(5)}, ${loc.longitude.toFixed(5)} <span class="muted">(${loc.geocode_source === 'postal_code' ? 'from the postal code' : 'as sent'})</span></dd>
  <dt>Time zone</dt><dd>${loc.timezone ?? 'unknown'}</dd>
  <dt>Weekday hours</dt><dd>${hours(loc.weekday_open_hours, loc.weekday_close_hours)}</dd>
  <dt>Weekend hours</dt><dd>${hours(loc.weekend_open_hours, loc.weekend_close_hours)}</dd>
  <dt>Phone</dt><dd>${loc.phone_number ?? '—'}</dd>
  <dt>Email</dt><dd>${loc.email ?? '—'}</dd>
</dl>
</section>
${mapSvg({ id: 'location-map', title: `Map of ${loc.name}`, description: `${loc.name} at ${loc.latitude.toFixed(3)}, ${loc.longitude.toFixed(3)}.`, points: [{ latitude: loc.latitude, longitude: loc.longitude, label: loc.name, name: loc.name, kind: 'origin' }] })}
</div>
<h2 id="loc-loads">Loads through this location</h2>
${loads.length === 0 ? emptyState('No load stops here yet.') : loadTable(loads.length === 1 ? 'The load with a stop here (times in UTC)' : `The ${loads.length === 25 ? '25 newest' : count(loads.length)} loads with a stop here (times in UTC)`, loads, { customer: true, carrier: true })}`;
  return { title: loc.name, body };
}

async function customerPage(ctx: DashboardContext, orgId: string, ref: string) {
  const customer = await ctx.services.customers.get(orgId, ref);
  const { loads, total } = await ctx.services.insights.customerActivity(orgId, customer.id);
  const body = html`<p><a href="/customers">← All customers</a></p>
<h1>${customer.name} <span class="muted">(${customer.external_reference_id})</span></h1>
<section class="card" aria-labelledby="customer-facts">
<h2 id="customer-facts">Details</h2>
<dl class="facts">
  <dt>Reference number</dt><dd>${customer.reference_number ?? '—'}</dd>
  <dt>Type</dt><dd>${customer.customer_type ?? '—'}</dd>
  <dt>Domain</dt><dd>${customer.domain ?? '—'}</dd>
  <dt>Phone</dt><dd>${customer.phone ?? '—'}</dd>
  <dt>Active</dt><dd>${customer.is_active ? 'Yes' : 'No'}</dd>
  <dt>Loads</dt><dd>${count(total)} <a href="/loads?customer=${customer.external_reference_id}">(filter the loads list)</a></dd>
</dl>
</section>
<h2 id="customer-loads">Loads</h2>
${loads.length === 0 ? emptyState('No loads for this customer yet.') : loadTable('Newest loads of this customer (times in UTC)', loads, { carrier: true })}`;
  return { title: customer.name, body };
}

export function detailRoutes(app: FastifyInstance, ctx: DashboardContext) {
  const show =
    (
      active: 'locations' | 'carriers' | 'customers' | 'lanes',
      build: (orgId: string, params: Record<string, string>) => Promise<{ title: string; body: SafeHtml }>,
    ) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      const s = requireSession(req, reply);
      if (!s) return reply;
      const { title, body } = await build(s.orgId, { ...(req.query as Record<string, string>), ...(req.params as Record<string, string>) });
      return sendPage(reply, page({ title, session: s, active, body }));
    };
  app.get(
    `${listPath('locations')}/:ref`,
    show('locations', (orgId, p) => locationPage(ctx, orgId, p.ref!)),
  );
  app.get(
    `${listPath('carriers')}/:ref`,
    show('carriers', (orgId, p) => carrierPage(ctx, orgId, p.ref!)),
  );
  app.get(
    `${listPath('customers')}/:ref`,
    show('customers', (orgId, p) => customerPage(ctx, orgId, p.ref!)),
  );
  app.get(
    '/lanes/:origin/:destination/:equipment',
    show('lanes', (orgId, p) => lanePage(ctx, orgId, p.origin!, p.destination!, p.equipment!.toUpperCase(), p.rank_by === 'balanced' ? 'balanced' : 'history')),
  );
}
