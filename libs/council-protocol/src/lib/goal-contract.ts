import { LEVELS_OF_THREE, RiskLevel } from './contracts';
import { fail, join, num, optNum, record, str, strings, oneOf } from './validation';

/** Budget of a run (spec 8.1). `max_time` is milliseconds or a duration string. */
export interface GoalContractBudget {
  max_rounds: number;
  max_time: number | string;
  max_cost?: number;
  max_tokens?: number;
}

/** GoalContract (spec 8.1): the aligned question every candidate answers. */
export interface GoalContract {
  goal_contract_id: string;
  question: string;
  goal: string;
  success_criteria: string[];
  constraints: string[];
  non_goals: string[];
  decision_owner: string;
  risk_level: RiskLevel;
  time_horizon: string;
  evidence_set: string[];
  unknowns: string[];
  budget: GoalContractBudget;
  /**
   * The domain the question belongs to (e.g. `payments.migrations`): capability estimates, chair
   * selection, calibration and the concentration audit are scoped by it (15.3, 16.7); an ACP
   * proposal posted from the decision goes to this domain. Required from council:L4.
   */
  domain?: string;
}

/** Domains are dotted tokens, as ACP domains are: letters, digits, `_`, `-`, separated by `.`. */
const DOMAIN = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

/** The domain history is scoped by; a contract without one is in `general`. */
export function runDomain(contract: Pick<GoalContract, 'domain'>): string {
  return contract.domain ?? 'general';
}

const SHORT_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `max_time` as milliseconds. Accepts a number of milliseconds, an ISO-8601 duration
 * (`PT15M`, `P1DT2H`) or the spec's own shorthand (`15m`, `30s`, `2h`, `500ms`).
 */
export function parseMaxTime(value: unknown, field = 'budget.max_time'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value <= 0) fail(field, 'must be a positive number of milliseconds');
    return value;
  }
  if (typeof value !== 'string') fail(field, 'must be milliseconds or a duration such as PT15M or 15m');
  const short = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  if (short) return positive(Number(short[1]) * SHORT_UNITS[short[2]], field);
  const iso = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value.trim());
  if (iso && value.trim() !== 'P' && !value.trim().endsWith('T')) {
    const [, d, h, m, s] = iso;
    const ms =
      Number(d ?? 0) * SHORT_UNITS['d'] + Number(h ?? 0) * SHORT_UNITS['h'] + Number(m ?? 0) * SHORT_UNITS['m'] + Number(s ?? 0) * 1000;
    return positive(ms, field);
  }
  return fail(field, 'must be milliseconds or a duration such as PT15M or 15m');
}

function positive(ms: number, field: string): number {
  if (!(ms > 0)) fail(field, 'must be a positive duration');
  return ms;
}

function parseBudget(value: unknown, path: string): GoalContractBudget {
  const b = record(value, path);
  const budget: GoalContractBudget = {
    max_rounds: num(b, 'max_rounds', path, { min: 1, integer: true }),
    max_time: b['max_time'] as number | string,
  };
  parseMaxTime(b['max_time'], join(path, 'max_time'));
  const maxCost = optNum(b, 'max_cost', path, { min: 0 });
  const maxTokens = optNum(b, 'max_tokens', path, { min: 0, integer: true });
  if (maxCost !== undefined) budget.max_cost = maxCost;
  if (maxTokens !== undefined) budget.max_tokens = maxTokens;
  return budget;
}

/**
 * Validate a GoalContract. Checklist item 1: it names success criteria, constraints, owner and
 * budget; lists the spec shows as `[]` may be empty but must be present where the checklist
 * requires them (constraints), and default to `[]` otherwise.
 */
export function parseGoalContract(input: unknown, path = ''): GoalContract {
  const o = record(input, path);
  const contract: GoalContract = {
    goal_contract_id: str(o, 'goal_contract_id', path),
    question: str(o, 'question', path),
    goal: str(o, 'goal', path),
    success_criteria: strings(o, 'success_criteria', path, { nonEmpty: true }),
    constraints: strings(o, 'constraints', path),
    non_goals: strings(o, 'non_goals', path, { optional: true }),
    decision_owner: str(o, 'decision_owner', path),
    risk_level: oneOf(o, 'risk_level', path, LEVELS_OF_THREE),
    time_horizon: str(o, 'time_horizon', path),
    evidence_set: strings(o, 'evidence_set', path, { optional: true }),
    unknowns: strings(o, 'unknowns', path, { optional: true }),
    budget: parseBudget(o['budget'], join(path, 'budget')),
  };
  if (o['domain'] !== undefined) {
    if (typeof o['domain'] !== 'string' || !DOMAIN.test(o['domain']) || o['domain'].length > 200)
      fail(join(path, 'domain'), 'must be a dotted token of letters, digits, _ and - (at most 200 characters)');
    contract.domain = o['domain'];
  }
  return contract;
}

export function maxTimeMs(contract: GoalContract): number {
  return parseMaxTime(contract.budget.max_time);
}
