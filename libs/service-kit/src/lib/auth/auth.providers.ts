import { Provider } from '@nestjs/common';
import { CommandContext } from '../command-context';
import { NatsAuthCheck } from './nats-auth-check';
import { NonceStore } from './nonce-store';
import { ParticipantDirectory } from './participant-directory';
import { ProposalLabels } from './proposal-labels';
import { ProposalReadPolicy } from './proposal-reading';
import { RejectionRecorder } from './rejection-recorder';

/**
 * What a service that takes commands registers in its module to authenticate and authorize
 * them: `providers: [...authProviders, ...]`, then inject CommandContext (and RejectionRecorder
 * to record refusals for the audit log, ProposalReadPolicy to show proposals to a reader).
 */
export const authProviders: Provider[] = [
  NatsAuthCheck,
  ParticipantDirectory,
  NonceStore,
  RejectionRecorder,
  CommandContext,
  ProposalLabels,
  ProposalReadPolicy,
];
