/**
 * The JSON Schemas of Appendix B, as values: edges that describe the wire to others (the MCP
 * server's tool input schemas) derive from these instead of restating field rules.
 */
import proposalSchema from '../../schemas/proposal.schema.json';
import decisionEventSchema from '../../schemas/decision-event.schema.json';

export type JsonSchema = { [keyword: string]: unknown };

export const WIRE_SCHEMAS: { readonly proposal: JsonSchema; readonly decisionEvent: JsonSchema } = {
  proposal: proposalSchema as JsonSchema,
  decisionEvent: decisionEventSchema as JsonSchema,
};
