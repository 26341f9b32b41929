import { DissentEntry, NO_DECISION, SYNTHESIS } from '../decision-record';
import { RunRecord } from '../run-record';
import { instantMs } from '../validation';
import { chairOf } from './capability';

/**
 * Concentration audit (spec 16, rule 7): per domain and period, who proposes, whose candidates
 * are selected, who chairs and whose dissent survives, each with its Herfindahl–Hirschman index.
 * A self-confirming reputation loop shows as the same participant topping `selected` and `chairs`.
 */
export const CONCENTRATION_DIMENSIONS = ['proposes', 'selected', 'chairs', 'dissent_survives'] as const;
export type ConcentrationDimension = (typeof CONCENTRATION_DIMENSIONS)[number];

export const CONCENTRATION_PERIODS = ['day', 'week', 'month', 'quarter', 'year', 'all'] as const;
export type ConcentrationPeriod = (typeof CONCENTRATION_PERIODS)[number];

/** Count members, or their model families (one family behind many members is still one voice). */
export type ConcentrationSubject = 'member' | 'model_family';

export interface ConcentrationShare {
  who: string;
  weight: number;
  share: number;
}

export interface ConcentrationMeasure {
  total: number;
  shares: ConcentrationShare[];
  /** Σ share²: 1/n when even, 1 when one participant holds everything; null when nothing counted. */
  hhi: number | null;
  /** (hhi − 1/n) / (1 − 1/n): 0 even, 1 concentrated; 1 when a single participant counted. */
  normalized_hhi: number | null;
}

export interface ConcentrationCell {
  domain: string;
  period: string;
  run_ids: string[];
  dimensions: Record<ConcentrationDimension, ConcentrationMeasure>;
  /** Dissent entries that name no participant's artifact. */
  unattributed_dissent: number;
  findings: string[];
}

export interface ConcentrationAudit {
  subject: ConcentrationSubject;
  period: ConcentrationPeriod;
  cells: ConcentrationCell[];
  skipped: { run_id: string; reason: string }[];
}

export interface ConcentrationOptions {
  period: ConcentrationPeriod;
  subject: ConcentrationSubject;
  /** A dimension with normalized HHI at or above this is reported ... */
  threshold: number;
  /** ... once it counts at least this much (small samples are noise, 16.4). */
  min_total: number;
}

export const DEFAULT_CONCENTRATION_OPTIONS: ConcentrationOptions = { period: 'month', subject: 'member', threshold: 0.5, min_total: 5 };

export function concentrationIndex(weights: ReadonlyMap<string, number>): ConcentrationMeasure {
  const entries = [...weights.entries()].filter(([, w]) => w > 0);
  const total = entries.reduce((s, [, w]) => s + w, 0);
  if (total === 0) return { total: 0, shares: [], hhi: null, normalized_hhi: null };
  const shares = entries
    .map(([who, weight]) => ({ who, weight, share: weight / total }))
    .sort((a, b) => b.weight - a.weight || (a.who < b.who ? -1 : a.who > b.who ? 1 : 0));
  const hhi = shares.reduce((s, x) => s + x.share * x.share, 0);
  const n = shares.length;
  return { total, shares, hhi, normalized_hhi: n === 1 ? 1 : (hhi - 1 / n) / (1 - 1 / n) };
}

/** The period an instant falls in, in UTC: `2025-03-14`, `2025-W11`, `2025-03`, `2025-Q1`, `2025`, `all`. */
export function periodOf(instant: string, period: ConcentrationPeriod): string {
  const d = new Date(instantMs(instant, 'ended_at'));
  const iso = d.toISOString();
  switch (period) {
    case 'day':
      return iso.slice(0, 10);
    case 'month':
      return iso.slice(0, 7);
    case 'quarter':
      return `${iso.slice(0, 4)}-Q${Math.floor(d.getUTCMonth() / 3) + 1}`;
    case 'year':
      return iso.slice(0, 4);
    case 'all':
      return 'all';
    case 'week': {
      // ISO 8601 week: the week with the year's first Thursday is week 1.
      const day = (d.getUTCDay() + 6) % 7;
      const thursday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day + 3);
      const year = new Date(thursday).getUTCFullYear();
      const week = Math.floor((thursday - Date.UTC(year, 0, 1)) / (7 * 86_400_000)) + 1;
      return `${year}-W${String(week).padStart(2, '0')}`;
    }
    default: {
      const _exhaustive: never = period;
      return _exhaustive;
    }
  }
}

function add(map: Map<string, number>, who: string, w: number): void {
  map.set(who, (map.get(who) ?? 0) + w);
}

/** Who each artifact id of a run speaks for: authors, reviewers, frame observers. */
function speakers(record: RunRecord, chosen: Set<string>): Map<string, string[]> {
  const by = new Map<string, string[]>();
  const authorOf = new Map<string, string>();
  for (const l of record.lineage) for (const v of l.versions) authorOf.set(v, l.author_member_id);
  for (const [id, author] of authorOf) by.set(id, [author]);
  for (const r of record.artifacts.reviews) by.set(r.review_id, [r.reviewer_member_id]);
  for (const f of record.artifacts.frame_checks) by.set(f.frame_check_id, [f.observer_member_id]);
  for (const map of record.artifacts.conflict_maps) {
    for (const c of map.conflicts) {
      // A conflict's dissent is the side that was not chosen.
      const losing = c.positions.filter((p) => !chosen.has(p));
      const authors = (losing.length ? losing : c.positions).map((p) => authorOf.get(p)).filter((a): a is string => a !== undefined);
      by.set(c.conflict_id, [...new Set(authors)]);
    }
  }
  return by;
}

/**
 * The ids a dissent entry names: its refs (an issue ref `<review>#issue-<n>` names its review),
 * and ids in its text, longest first so `cand-A-v2` is not also read as `cand-A`.
 */
function mentionedIds(entry: DissentEntry, ids: readonly string[]): string[] {
  const found = new Set<string>();
  const refs = typeof entry === 'string' ? [] : (entry.refs ?? []);
  for (const id of ids) if (refs.some((r) => r === id || r.startsWith(`${id}#issue-`))) found.add(id);
  let text = typeof entry === 'string' ? entry : entry.description;
  for (const id of [...ids].sort((a, b) => b.length - a.length)) {
    if (text.includes(id)) {
      found.add(id);
      text = text.split(id).join(' ');
    }
  }
  return [...found];
}

interface RunCounts {
  proposes: Map<string, number>;
  selected: Map<string, number>;
  chairs: Map<string, number>;
  dissent_survives: Map<string, number>;
  unattributed: number;
}

function emptyCounts(): RunCounts {
  return { proposes: new Map(), selected: new Map(), chairs: new Map(), dissent_survives: new Map(), unattributed: 0 };
}

function countRun(record: RunRecord, subject: ConcentrationSubject): RunCounts {
  const family = new Map(record.participants.map((m) => [m.member_id, m.model_family]));
  const who = (member: string) => (subject === 'model_family' ? (family.get(member) ?? 'unknown') : member);
  const d = record.decision_record;
  const counts = emptyCounts();
  for (const l of record.lineage) add(counts.proposes, who(l.author_member_id), 1);
  const picked = new Set(
    d && d.selected_path !== NO_DECISION ? [...(d.selected_path === SYNTHESIS ? [] : [d.selected_path]), ...d.incorporated] : [],
  );
  const chosenLineages = record.lineage.filter((l) => l.versions.some((v) => picked.has(v)));
  const chosenVersions = new Set(chosenLineages.flatMap((l) => l.versions));
  // One selection per run, shared by the lineages it drew on.
  for (const l of chosenLineages) add(counts.selected, who(l.author_member_id), 1 / chosenLineages.length);
  const chair = chairOf(record);
  if (chair) add(counts.chairs, who(chair), 1);
  const ids = speakers(record, chosenVersions);
  for (const entry of d?.unresolved_dissent ?? []) {
    const voices = new Set<string>();
    for (const id of mentionedIds(entry, [...ids.keys()])) for (const m of ids.get(id) as string[]) voices.add(who(m));
    if (voices.size === 0) counts.unattributed++;
    for (const v of voices) add(counts.dissent_survives, v, 1 / voices.size);
  }
  return counts;
}

const DECIDED = new Set(['decided', 'decided-with-dissent']);

/** The audit over decided runs, one cell per domain × period, cells sorted by domain then period. */
export function concentrationAudit(
  runs: readonly { record: RunRecord; domain: string }[],
  options: Partial<ConcentrationOptions> = {},
): ConcentrationAudit {
  const opts = { ...DEFAULT_CONCENTRATION_OPTIONS, ...options };
  const skipped: { run_id: string; reason: string }[] = [];
  const cells = new Map<string, { domain: string; period: string; run_ids: string[]; sums: RunCounts }>();
  for (const { record, domain } of runs) {
    const state = record.terminal?.terminal_state;
    if (!state || !DECIDED.has(state) || !record.decision_record) {
      skipped.push({ run_id: record.run_id, reason: state ? `not decided (${state})` : 'still running' });
      continue;
    }
    const period = periodOf(record.timing.ended_at ?? record.terminal?.at ?? record.timing.started_at, opts.period);
    const key = JSON.stringify([domain, period]);
    const cell = cells.get(key) ?? { domain, period, run_ids: [] as string[], sums: emptyCounts() };
    if (cell.run_ids.includes(record.run_id)) continue;
    cell.run_ids.push(record.run_id);
    const c = countRun(record, opts.subject);
    for (const dim of CONCENTRATION_DIMENSIONS) for (const [w, n] of c[dim]) add(cell.sums[dim], w, n);
    cell.sums.unattributed += c.unattributed;
    cells.set(key, cell);
  }
  const out: ConcentrationCell[] = [...cells.values()]
    .sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0))
    .map((cell) => {
      const dimensions = Object.fromEntries(CONCENTRATION_DIMENSIONS.map((dim) => [dim, concentrationIndex(cell.sums[dim])])) as Record<
        ConcentrationDimension,
        ConcentrationMeasure
      >;
      const findings: string[] = [];
      for (const dim of CONCENTRATION_DIMENSIONS) {
        const m = dimensions[dim];
        if (m.normalized_hhi !== null && m.total >= opts.min_total && m.normalized_hhi >= opts.threshold) {
          findings.push(
            `${dim} concentrated: ${m.shares[0].who} holds ${(m.shares[0].share * 100).toFixed(0)}% (normalized HHI ${m.normalized_hhi.toFixed(2)})`,
          );
        }
      }
      const topSelected = dimensions.selected.shares[0];
      const topChair = dimensions.chairs.shares[0];
      if (
        topSelected &&
        topChair &&
        topSelected.who === topChair.who &&
        dimensions.chairs.total >= opts.min_total &&
        topChair.share > 0.5 &&
        topSelected.share > 0.5
      ) {
        findings.push(`${topChair.who} is both most selected and most often chair: the section 16 loop`);
      }
      return {
        domain: cell.domain,
        period: cell.period,
        run_ids: [...cell.run_ids].sort(),
        dimensions,
        unattributed_dissent: cell.sums.unattributed,
        findings,
      };
    });
  return { subject: opts.subject, period: opts.period, cells: out, skipped };
}
