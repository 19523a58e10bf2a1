// What owned agents' turns used: tokens and cost, from GET /v1/usage and
// a turn's usage in GET /v1/turns/{turn}. Costs come as integer
// micro-dollars; an unknown cost (no price for the model) is shown as
// unknown, never as zero, and an estimated one (from the price table) is
// marked "~".

import { get } from './api.js';

const fmt = new Intl.NumberFormat('en-US');
export const tokens = (n) => fmt.format(n || 0);

// dollars formats micro-dollars exactly, with two to six decimals.
export function dollars(micros) {
  const m = Math.max(0, Math.trunc(micros || 0));
  let frac = String(m % 1_000_000).padStart(6, '0').replace(/0+$/, '');
  while (frac.length < 2) frac += '0';
  return `$${fmt.format(Math.floor(m / 1_000_000))}.${frac}`;
}

// sumCost is a sum's cost: "$0.0421", "~$0.0421" when estimated in part,
// "+ N unpriced" for turns without a known cost, "unknown" when none has
// one, "" when nothing was used.
export function sumCost(s) {
  if (!s) return '';
  if (!s.costed) return s.unpriced ? 'cost unknown' : '';
  let out = (s.estimated ? '~' : '') + dollars(s.cost_micros);
  if (s.unpriced) out += ` + ${s.unpriced} unpriced`;
  return out;
}

// sumLine is a usage sum on one line.
export function sumLine(s) {
  if (!s || !s.turns) return 'no turns yet';
  const parts = [`${tokens(s.input_tokens)} in`, `${tokens(s.output_tokens)} out`];
  if (s.cached_tokens) parts.push(`${tokens(s.cached_tokens)} cached`);
  if (s.reasoning_tokens) parts.push(`${tokens(s.reasoning_tokens)} reasoning`);
  const cost = sumCost(s);
  return `${s.turns} turn${s.turns === 1 ? '' : 's'} · ${parts.join(' · ')}${cost ? ` · ${cost}` : ''}`;
}

// turnCost is one turn's cost.
export function turnCost(u) {
  if (u.cost_micros == null) return 'cost unknown';
  return u.cost_estimated ? `~${dollars(u.cost_micros)} (estimated)` : dollars(u.cost_micros);
}

// turnLine is one turn's usage on one line.
export function turnLine(u) {
  const parts = [`${tokens(u.input_tokens)} input`, `${tokens(u.output_tokens)} output`,
    `${tokens(u.cached_tokens)} cached`, `${tokens(u.reasoning_tokens)} reasoning tokens`, turnCost(u)];
  if (u.model) parts.push(`model ${u.model}`);
  return parts.join(' · ');
}

// loadUsage reads the usage report grouped by by: a map from each row's
// key (agent peer, room id, …) to its sums.
export async function loadUsage(by) {
  const rep = await get('/v1/usage', { by });
  return new Map(((rep && rep.rows) || []).map((r) => [r.key, r]));
}
