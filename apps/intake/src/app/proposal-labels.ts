// The labels are shared with every service that shows proposals; intake writes them.
export { labelStream, PROPOSAL_LABEL_CATEGORY, PROPOSAL_LABELLED, ProposalLabels } from '@conclave/service-kit';
export type { ProposalLabel } from '@conclave/service-kit';
