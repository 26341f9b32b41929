/**
 * Validation of wire objects (spec 12, Appendix B) and of the NATS API request bodies
 * (DESIGN section 5). Input is `unknown` - anything JSON.parse can give, or worse - and every
 * failure ends in an AcpError naming the offending field; nothing else escapes.
 *
 * Codes: a wrong `schema_version` is UNSUPPORTED_SCHEMA_VERSION (18.4) and is checked first,
 * because nothing else of an unknown revision can be interpreted; a malformed ULID is
 * INVALID_ID; everything else, including a missing field, is SCHEMA_VIOLATION.
 */
import { Expose, Transform, plainToInstance } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayUnique,
  Equals,
  IsArray,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
  buildMessage,
  validateSync,
  type ValidationError,
  type ValidationOptions,
} from 'class-validator';
import {
  DECISION_EVENT_TYPE,
  ENTRY_TYPES,
  HUMAN_OUTCOMES,
  OUTCOMES,
  PROPOSAL_STATUSES,
  RESPONSE_TYPES,
  TRIGGERS,
  WIRE_SCHEMA_VERSION,
} from './contracts';
import { isDomain } from './domain-scoped-resolution';
import { AcpError } from './errors';
import { isUtcTimestamp } from './timestamps';
import { isUlid } from './ids';
import type {
  DecisionEvent,
  EscalateRequest,
  GetRequest,
  LineageRequest,
  ListRequest,
  Proposal,
  ProposeRequest,
  QuorumPolicySpec,
  RespondRequest,
  ResolveRequest,
  Resolution,
  Response,
} from './wire-format';

// ---- custom constraints (their names map to error codes in `toAcpError`) ----

const C_ULID = 'isUlid';
const C_SCHEMA_VERSION = 'isWireSchemaVersion';

function IsUlid(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: C_ULID,
      validator: {
        validate: (v: unknown) => isUlid(v),
        defaultMessage: buildMessage((each) => `${each}$property must be a ULID (26 upper-case Crockford base32 characters)`, options),
      },
    },
    options,
  );
}

function IsUtcTimestamp(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isUtcTimestamp',
      validator: {
        validate: (v: unknown) => isUtcTimestamp(v),
        defaultMessage: buildMessage((each) => `${each}$property must be an ISO 8601 UTC timestamp ending in Z or +00:00`, options),
      },
    },
    options,
  );
}

function IsDomain(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isDomain',
      validator: {
        validate: (v: unknown) => isDomain(v),
        defaultMessage: buildMessage((each) => `${each}$property must be segments of [A-Za-z0-9_-] joined by '.'`, options),
      },
    },
    options,
  );
}

function IsWireSchemaVersion(): PropertyDecorator {
  return ValidateBy({
    name: C_SCHEMA_VERSION,
    validator: {
      validate: (v: unknown) => v === WIRE_SCHEMA_VERSION,
      defaultMessage: buildMessage(() => `$property must be "${WIRE_SCHEMA_VERSION}"`),
    },
  });
}

function IsStringOrNull(): PropertyDecorator {
  return ValidateBy({
    name: 'isStringOrNull',
    validator: {
      validate: (v: unknown) => v === null || typeof v === 'string',
      defaultMessage: buildMessage(() => '$property must be a string or null'),
    },
  });
}

const TO_INSTANCE = { excludeExtraneousValues: true, exposeUnsetFields: false } as const;

/**
 * Nested DTO hydration without class-transformer's @Type, which needs the reflect-metadata
 * global polyfill; a pure library does not install globals. Non-objects are left as they are,
 * for the validators to name.
 */
function Nested(Dto: new () => object, each = false): PropertyDecorator {
  const one = (v: unknown) => (isRecord(v) ? plainToInstance(Dto, v, TO_INSTANCE) : v);
  return Transform(({ value }) => (each ? (Array.isArray(value) ? value.map(one) : value) : one(value)));
}

/** Bounds on lists an edge resolves entry by entry (each one is a load). */
export const MAX_CAUSES = 64;
export const MAX_ELIGIBLE = 1000;
export const MAX_LINEAGE_DEPTH = 16;

const FINITE = { allowNaN: false, allowInfinity: false } as const;
const ID_LENGTH: [number, number] = [1, 256];

/** A field that may be left out, but is checked when present (null included). */
const IfPresent = (key: string) => ValidateIf((o: Record<string, unknown>) => o[key] !== undefined);

// ---- DTOs: validation only; parse functions return plain typed objects ----

class ResponseDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IsDefined() @IsString() @Length(...ID_LENGTH) participant_id!: unknown;
  @Expose() @IsDefined() @IsIn(RESPONSE_TYPES) response_type!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) @Max(1) confidence!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) @Max(1) domain_authority!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) @Max(1) trust_score!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) @Max(1) weight!: unknown;
  @Expose() @IfPresent('reason') @IsStringOrNull() reason?: unknown;
  @Expose() @IsDefined() @IsUtcTimestamp() timestamp!: unknown;
}

class ResolutionDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IsDefined() @IsIn(OUTCOMES) outcome!: unknown;
  @Expose() @IsDefined() @IsIn(TRIGGERS) trigger!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) votes_for!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) votes_against!: unknown;
  @Expose() @IsDefined() @IsUtcTimestamp() decided_at!: unknown;
}

class QuorumPolicyDto {
  @Expose()
  @IsDefined()
  @IsString()
  @ValidateBy({
    name: 'isQuorumPolicyKind',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && /^[a-z][a-z0-9_-]{0,63}$/.test(v),
      defaultMessage: buildMessage(() => '$property must be a policy kind such as count, weighted or unanimous'),
    },
  })
  kind!: unknown;
  @Expose() @IfPresent('threshold') @IsNumber(FINITE) @Min(Number.MIN_VALUE) threshold?: unknown;
}

/** Fields shared by a full Proposal and a propose request. */
class ProposalFieldsDto {
  @Expose() @IsDefined() @IsIn(ENTRY_TYPES) type!: unknown;
  @Expose() @IsDefined() @IsString() @Length(1, 255) @IsDomain() domain!: unknown;
  @Expose() @IsDefined() @IsString() @Length(...ID_LENGTH) author!: unknown;
  @Expose() @IsDefined() @IsObject() payload!: unknown;
}

class ProposalDto extends ProposalFieldsDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IsDefined() @IsIn(PROPOSAL_STATUSES) status!: unknown;
  @Expose() @IsDefined() @IsArray() @ValidateNested({ each: true }) @Nested(ResponseDto, true) responses!: unknown;
  @Expose() @IsDefined() @IsInt() @Min(1) quorum!: unknown;
  @Expose() @IsDefined() @IsUtcTimestamp() created_at!: unknown;
  @Expose() @IsOptional() @IsUtcTimestamp() expires_at?: unknown;
  @Expose() @IsOptional() @ValidateNested() @Nested(ResolutionDto) resolution?: unknown;
}

class ProposeRequestDto extends ProposalFieldsDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IfPresent('proposal_id') @IsUlid() proposal_id?: unknown;
  @Expose() @IfPresent('status') @Equals('pending', { message: 'status of a new proposal must be "pending" or left out' }) status?: unknown;
  @Expose()
  @IfPresent('responses')
  @IsArray()
  @ArrayMaxSize(0, { message: 'responses of a new proposal must be empty or left out' })
  responses?: unknown;
  @Expose()
  @IfPresent('resolution')
  @Equals(null, { message: 'resolution of a new proposal must be null or left out' })
  resolution?: unknown;
  @Expose() @IsDefined() @IsInt() @Min(1) quorum!: unknown;
  @Expose() @IsDefined() @IsUtcTimestamp() created_at!: unknown;
  @Expose() @IsOptional() @IsUtcTimestamp() expires_at?: unknown;
  @Expose() @IfPresent('quorum_policy') @IsObject() @ValidateNested() @Nested(QuorumPolicyDto) quorum_policy?: unknown;
  @Expose() @IfPresent('depends_on') @IsArray() @ArrayUnique() @IsUlid({ each: true }) depends_on?: unknown;
  @Expose()
  @IfPresent('eligible_participants')
  @IsArray()
  @ArrayMaxSize(MAX_ELIGIBLE)
  @ArrayUnique()
  @IsString({ each: true })
  @Length(...ID_LENGTH, { each: true })
  eligible_participants?: unknown;
  @Expose() @IfPresent('caused_by') @IsArray() @ArrayMaxSize(MAX_CAUSES) @ArrayUnique() @IsUlid({ each: true }) caused_by?: unknown;
}

class RespondRequestDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IsDefined() @IsString() @Length(...ID_LENGTH) participant_id!: unknown;
  @Expose() @IsDefined() @IsIn(RESPONSE_TYPES) response_type!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) @Max(1) confidence!: unknown;
  // Optional: by default the participant registry supplies them (DESIGN 6); checked when sent.
  @Expose() @IfPresent('domain_authority') @IsNumber(FINITE) @Min(0) @Max(1) domain_authority?: unknown;
  @Expose() @IfPresent('trust_score') @IsNumber(FINITE) @Min(0) @Max(1) trust_score?: unknown;
  @Expose() @IfPresent('reason') @IsStringOrNull() reason?: unknown;
  @Expose() @IfPresent('timestamp') @IsUtcTimestamp() timestamp?: unknown;
}

/** API bodies that are not spec wire objects carry `schema_version` optionally. */
class ApiBodyDto {
  @Expose() @IfPresent('schema_version') @IsWireSchemaVersion() schema_version?: unknown;
}

class EscalateRequestDto extends ApiBodyDto {
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IsDefined() @IsString() @Length(1, 4096) reason!: unknown;
  @Expose() @IsDefined() @IsString() @Length(...ID_LENGTH) requested_by!: unknown;
}

class ResolveRequestDto extends ApiBodyDto {
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IsDefined() @IsIn(HUMAN_OUTCOMES) outcome!: unknown;
  @Expose() @IsDefined() @IsString() @Length(...ID_LENGTH) resolved_by!: unknown;
  @Expose() @IfPresent('note') @IsStringOrNull() note?: unknown;
  @Expose() @IfPresent('escalation_id') @IsUlid() escalation_id?: unknown;
  @Expose() @IfPresent('payload_hash') @IsString() @Length(1, 256) payload_hash?: unknown;
}

class LineageRequestDto extends ApiBodyDto {
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IfPresent('depth') @IsInt() @Min(1) @Max(MAX_LINEAGE_DEPTH) depth?: unknown;
}

class GetRequestDto extends ApiBodyDto {
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
}

class ListRequestDto extends ApiBodyDto {
  @Expose() @IfPresent('domain') @IsString() @IsDomain() domain?: unknown;
  @Expose() @IfPresent('status') @IsIn(PROPOSAL_STATUSES) status?: unknown;
  @Expose() @IfPresent('limit') @IsInt() @Min(1) @Max(1000) limit?: unknown;
  @Expose() @IfPresent('cursor') @IsString() @Length(1, 1024) cursor?: unknown;
}

class DecisionEventDto {
  @Expose() @IsDefined() @IsWireSchemaVersion() schema_version!: unknown;
  @Expose() @IsDefined() @IsUlid() event_id!: unknown;
  @Expose() @IsDefined() @Equals(DECISION_EVENT_TYPE) event_type!: unknown;
  @Expose() @IsDefined() @IsUlid() proposal_id!: unknown;
  @Expose() @IsDefined() @IsString() @IsDomain() domain!: unknown;
  @Expose() @IsDefined() @IsIn(OUTCOMES) outcome!: unknown;
  @Expose() @IsDefined() @IsIn(TRIGGERS) trigger!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) votes_for!: unknown;
  @Expose() @IsDefined() @IsNumber(FINITE) @Min(0) votes_against!: unknown;
  @Expose() @IsDefined() @IsUtcTimestamp() decided_at!: unknown;
}

// ---- the engine ----

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first failing leaf, in declaration order, as a typed error with a dotted field path. */
function toAcpError(errors: ValidationError[], prefix = ''): AcpError | undefined {
  for (const e of errors) {
    const field = prefix + e.property;
    if (e.constraints && Object.keys(e.constraints).length > 0) {
      const c = e.constraints;
      if (c['isDefined']) return new AcpError('SCHEMA_VIOLATION', `${field} is required`, field);
      if (c[C_ULID]) return new AcpError('INVALID_ID', `${field} must be a ULID (26 upper-case Crockford base32 characters)`, field);
      if (c[C_SCHEMA_VERSION]) {
        return new AcpError('UNSUPPORTED_SCHEMA_VERSION', `${field} must be "${WIRE_SCHEMA_VERSION}"`, field);
      }
      const message = Object.values(c)[0].replace(e.property, field);
      return new AcpError('SCHEMA_VIOLATION', message, field);
    }
    const nested = toAcpError(e.children ?? [], `${field}.`);
    if (nested) return nested;
  }
  return undefined;
}

function checkSchemaVersion(body: Record<string, unknown>, required: boolean): void {
  const v = body['schema_version'];
  if (v === undefined) {
    if (required) throw new AcpError('SCHEMA_VIOLATION', 'schema_version is required', 'schema_version');
    return;
  }
  if (v !== WIRE_SCHEMA_VERSION) {
    throw new AcpError('UNSUPPORTED_SCHEMA_VERSION', `schema_version must be "${WIRE_SCHEMA_VERSION}"`, 'schema_version');
  }
}

/**
 * Validates `input` against a DTO class and returns the validated copy. Any exception that is not
 * an AcpError (a library choking on exotic input) becomes a SCHEMA_VIOLATION: the contract is that
 * unknown input never produces an untyped exception.
 */
function validate<T extends object>(
  Dto: new () => T,
  input: unknown,
  what: string,
  schemaVersionRequired: boolean,
): Record<string, unknown> {
  if (!isRecord(input)) throw new AcpError('SCHEMA_VIOLATION', `${what} must be a JSON object`);
  try {
    checkSchemaVersion(input, schemaVersionRequired);
    const dto = plainToInstance(Dto, input, TO_INSTANCE);
    const error = toAcpError(validateSync(dto, { forbidUnknownValues: false }));
    if (error) throw error;
    return dto as unknown as Record<string, unknown>;
  } catch (e) {
    if (e instanceof AcpError) throw e;
    throw new AcpError('SCHEMA_VIOLATION', `${what} could not be read`);
  }
}

function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return o;
}

// ---- public parse functions ----

function responseOf(v: Record<string, unknown>): Response {
  return stripUndefined({
    schema_version: WIRE_SCHEMA_VERSION,
    participant_id: v['participant_id'] as string,
    response_type: v['response_type'] as Response['response_type'],
    confidence: v['confidence'] as number,
    domain_authority: v['domain_authority'] as number,
    trust_score: v['trust_score'] as number,
    weight: v['weight'] as number,
    reason: v['reason'] as string | null | undefined,
    timestamp: v['timestamp'] as string,
  });
}

function resolutionOf(v: Record<string, unknown>, raw: Record<string, unknown>): Resolution {
  // extension fields (auto_resolved, escalation, ...) are carried over as sent
  return { ...raw, ...v } as unknown as Resolution;
}

/** A complete Proposal wire object (spec 12.2, B.1). */
export function parseProposal(input: unknown): Proposal {
  const v = validate(ProposalDto, input, 'proposal', true);
  const raw = input as Record<string, unknown>;
  const responses = (v['responses'] as Record<string, unknown>[]).map((r) => responseOf(r));
  const resolution = v['resolution'] ?? null;
  // extension fields (quorum_policy, depends_on, escalation, ...) are carried over as sent
  return {
    ...raw,
    ...(v as object),
    responses,
    expires_at: (v['expires_at'] as string | null | undefined) ?? null,
    resolution:
      resolution === null ? null : resolutionOf(resolution as Record<string, unknown>, raw['resolution'] as Record<string, unknown>),
  } as Proposal;
}

/** A Response wire object (spec 12.3/12.4, B.1 $defs.Response). */
export function parseResponse(input: unknown): Response {
  return responseOf(validate(ResponseDto, input, 'response', true));
}

/** A Resolution wire object (spec 12.5, B.1 $defs.Resolution). */
export function parseResolution(input: unknown): Resolution {
  return resolutionOf(validate(ResolutionDto, input, 'resolution', true), input as Record<string, unknown>);
}

/** A Decision Event wire object (spec 12.6, B.2), for consumers. Extension fields are kept. */
export function parseDecisionEvent(input: unknown): DecisionEvent {
  const v = validate(DecisionEventDto, input, 'decision event', true);
  return { ...(input as object), ...v } as unknown as DecisionEvent;
}

/**
 * Body of `acp.v1.propose`: a Proposal whose status/responses/resolution and proposal_id may be
 * left out, with the `quorum_policy`, `depends_on`, `eligible_participants` (7.3) and `caused_by`
 * (11.3) extensions. Checks the cross-field rules of
 * the built-in quorum policies; whether a custom kind is registered is the decider's check.
 */
export function parseProposeRequest(input: unknown): ProposeRequest {
  const v = validate(ProposeRequestDto, input, 'propose request', true);
  const quorum = v['quorum'] as number;
  const policy = v['quorum_policy'] as Record<string, unknown> | undefined;
  let quorum_policy: QuorumPolicySpec | undefined;
  if (policy !== undefined) {
    const kind = policy['kind'] as string;
    const threshold = policy['threshold'] as number | undefined;
    if (kind === 'count' && threshold !== undefined && threshold !== quorum) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'quorum_policy.threshold of a count policy is the proposal quorum (7.1): leave it out or make it equal',
        'quorum_policy.threshold',
      );
    }
    if (kind === 'weighted' && threshold === undefined) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'quorum_policy.threshold is required for a weighted policy (7.2): a number > 0',
        'quorum_policy.threshold',
      );
    }
    if (kind === 'unanimous' && threshold !== undefined) {
      throw new AcpError(
        'SCHEMA_VIOLATION',
        'quorum_policy.threshold is not used by a unanimous policy (7.3): leave it out',
        'quorum_policy.threshold',
      );
    }
    quorum_policy = threshold === undefined ? { kind } : { kind, threshold };
  }
  const depends_on = v['depends_on'] as string[] | undefined;
  if (depends_on !== undefined && v['proposal_id'] !== undefined && depends_on.includes(v['proposal_id'] as string)) {
    throw new AcpError('SCHEMA_VIOLATION', 'depends_on must not contain the proposal itself', 'depends_on');
  }
  const caused_by = v['caused_by'] as string[] | undefined;
  if (caused_by !== undefined && v['proposal_id'] !== undefined && caused_by.includes(v['proposal_id'] as string)) {
    throw new AcpError('SCHEMA_VIOLATION', 'caused_by must not contain the entry itself (11.3: causes are earlier entries)', 'caused_by');
  }
  const eligible = v['eligible_participants'] as string[] | undefined;
  return stripUndefined({
    schema_version: WIRE_SCHEMA_VERSION,
    proposal_id: v['proposal_id'] as string | undefined,
    type: v['type'] as ProposeRequest['type'],
    domain: v['domain'] as string,
    author: v['author'] as string,
    payload: v['payload'] as ProposeRequest['payload'],
    quorum,
    created_at: v['created_at'] as string,
    expires_at: (v['expires_at'] as string | null | undefined) ?? null,
    quorum_policy,
    depends_on: depends_on && depends_on.length > 0 ? [...depends_on] : undefined,
    eligible_participants: eligible ? [...eligible] : undefined,
    caused_by: caused_by && caused_by.length > 0 ? [...caused_by] : undefined,
  });
}

/**
 * Body of `acp.v1.respond`: a Response plus proposal_id. A sent `weight` is ignored (DESIGN 2).
 * `domain_authority` and `trust_score` may be left out: the edge takes them from the registry.
 * How far ahead a sent `timestamp` may be is the decider's rule (it knows `now`).
 */
export function parseRespondRequest(input: unknown): RespondRequest {
  const v = validate(RespondRequestDto, input, 'respond request', true);
  return stripUndefined({
    schema_version: WIRE_SCHEMA_VERSION,
    proposal_id: v['proposal_id'] as string,
    participant_id: v['participant_id'] as string,
    response_type: v['response_type'] as RespondRequest['response_type'],
    confidence: v['confidence'] as number,
    domain_authority: v['domain_authority'] as number | undefined,
    trust_score: v['trust_score'] as number | undefined,
    reason: (v['reason'] as string | null | undefined) ?? null,
    timestamp: v['timestamp'] as string | undefined,
  });
}

/** Body of `acp.v1.escalate`. */
export function parseEscalateRequest(input: unknown): EscalateRequest {
  const v = validate(EscalateRequestDto, input, 'escalate request', false);
  return { proposal_id: v['proposal_id'] as string, reason: v['reason'] as string, requested_by: v['requested_by'] as string };
}

/** Body of `acp.v1.resolve` (human resolution of an escalated proposal). */
export function parseResolveRequest(input: unknown): ResolveRequest {
  const v = validate(ResolveRequestDto, input, 'resolve request', false);
  return {
    proposal_id: v['proposal_id'] as string,
    outcome: v['outcome'] as ResolveRequest['outcome'],
    resolved_by: v['resolved_by'] as string,
    note: (v['note'] as string | null | undefined) ?? null,
    ...(v['escalation_id'] !== undefined ? { escalation_id: v['escalation_id'] as string } : {}),
    ...(v['payload_hash'] !== undefined ? { payload_hash: v['payload_hash'] as string } : {}),
  };
}

/** Body of `acp.v1.lineage`. */
export function parseLineageRequest(input: unknown): LineageRequest {
  const v = validate(LineageRequestDto, input, 'lineage request', false);
  return stripUndefined({ proposal_id: v['proposal_id'] as string, depth: v['depth'] as number | undefined });
}

/** Body of `acp.v1.get`. */
export function parseGetRequest(input: unknown): GetRequest {
  const v = validate(GetRequestDto, input, 'get request', false);
  return { proposal_id: v['proposal_id'] as string };
}

/** Body of `acp.v1.list`. */
export function parseListRequest(input: unknown): ListRequest {
  const v = validate(ListRequestDto, input, 'list request', false);
  return stripUndefined({
    domain: v['domain'] as string | undefined,
    status: v['status'] as ListRequest['status'],
    limit: v['limit'] as number | undefined,
    cursor: v['cursor'] as string | undefined,
  });
}
