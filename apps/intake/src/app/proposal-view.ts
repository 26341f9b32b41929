// Rendering for readers is shared with the escalation service (same withholding everywhere).
export { ProposalReadPolicy as ProposalView } from '@conclave/service-kit';
export type { ProposalForReader } from '@conclave/service-kit';
