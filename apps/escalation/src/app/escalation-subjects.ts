/**
 * Patterns the escalation service serves, relative to the subject prefix (`<prefix>.<pattern>`).
 * `v1.resolve` is DESIGN section 5's; the inbox queries are extensions. They are deliberately not
 * under `v1.escalations.>`, which the ACP_ESCALATIONS stream captures. The SDK names the same
 * strings (ConclaveClient.escalations / .escalation).
 */
export const ESCALATION_PATTERNS = {
  resolve: 'v1.resolve',
  list: 'v1.escalation.list',
  get: 'v1.escalation.get',
} as const;
